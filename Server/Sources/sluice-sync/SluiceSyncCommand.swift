import ArgumentParser
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOSSL
import PostgresNIO
import Prometheus
import SluiceDemo
import SluiceSync
import SluiceSyncDevelopment
import SluiceSyncStore
import SluiceSyncProtocol
import Sluice

@main
struct SluiceSyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sluice-sync",
        abstract: "The Sluice sync service: devices push and pull their change logs through it; PostgreSQL keeps the history.",
        subcommands: [Serve.self, TokenCommand.self, ShareCommand.self, MemberCommand.self, CompactCommand.self]
    )
}

/// Options every subcommand shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "PostgreSQL URL, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (or SLUICE_SYNC_POSTGRES; the password may come from PGPASSWORD).",
        valueName: "url"))
    var postgres: String?

    /// How the connection to PostgreSQL is encrypted.
    enum TLSMode: String, ExpressibleByArgument, CaseIterable {
        /// TLS or nothing: refuse a server without it (certificates checked against the system's roots).
        case require
        /// TLS when the server offers it, else plain.
        case prefer
        /// Plain (a server on loopback or a private network).
        case disable
    }

    @Option(help: ArgumentHelp(
        "TLS to PostgreSQL: require (refuse a server without it; its certificate is checked against the system's roots and the host name), prefer (TLS when offered), or disable.",
        valueName: "mode"))
    var postgresTLS: TLSMode = .prefer

    func configuration() throws -> PostgresClient.Configuration {
        let environment = ProcessInfo.processInfo.environment
        guard let text = postgres ?? environment["SLUICE_SYNC_POSTGRES"] else {
            throw ValidationError("--postgres URL (or SLUICE_SYNC_POSTGRES) is required")
        }
        guard let url = URLComponents(string: text), ["postgres", "postgresql"].contains(url.scheme ?? ""),
              let host = url.host, !host.isEmpty, let user = url.user, !user.isEmpty else {
            throw ValidationError("--postgres: '\(Self.redacted(text))' is not postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let tls: PostgresClient.Configuration.TLS = switch postgresTLS {
        case .require: .require(.makeClientConfiguration())
        case .prefer: .prefer(.makeClientConfiguration())
        case .disable: .disable
        }
        return PostgresClient.Configuration(host: host, port: url.port ?? 5432, username: user,
                                            password: url.password ?? environment["PGPASSWORD"],
                                            database: database.isEmpty ? nil : database, tls: tls)
    }

    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }

    /// A failure to reach PostgreSQL, as the command reports it.
    struct ConnectionFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Connects once and disconnects, so that a wrong address, password or TLS mode is
    /// reported at once (the client's pool goes on retrying for a minute before a query fails).
    func probe() async throws {
        let settings = try configuration()
        let tls: PostgresConnection.Configuration.TLS = switch postgresTLS {
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .disable: .disable
        }
        let host = settings.host ?? "127.0.0.1"
        let port = settings.port ?? 5432
        var logger = Logger(label: "sluice-sync.postgres")
        logger.logLevel = .critical
        do {
            let connection = try await PostgresConnection.connect(
                configuration: .init(host: host, port: port, username: settings.username, password: settings.password,
                                     database: settings.database, tls: tls), id: 0, logger: logger)
            try await connection.close()
        } catch {
            throw ConnectionFailure(description: "cannot connect to PostgreSQL at \(host):\(port) (--postgres-tls \(postgresTLS.rawValue)): \(String(reflecting: error))")
        }
    }

    /// Runs `body` with a running client.
    func withStorage<T: Sendable>(_ body: @escaping @Sendable (SyncStorage) async throws -> T) async throws -> T {
        try await probe()
        var logger = Logger(label: "sluice-sync.postgres")
        logger.logLevel = .error
        let client = PostgresClient(configuration: try configuration(), backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            let storage = SyncStorage(client: client)
            try await storage.prepare()
            let result = try await body(storage)
            group.cancelAll()
            return result
        }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serves devices over HTTP; creates its tables in PostgreSQL on first start.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port; the line 'listening on URL' says which).")
    var port = 8080

    @Option(help: ArgumentHelp("The registered schema as JSON (a SyncSchema, or a SyncSchemaVersions for several app versions). Required, unless --demo.", valueName: "file"))
    var schema: String?

    @Flag(help: "Serve the demo domain's schema (person, package, package_content and message), to try sync; an app's service names its own with --schema.")
    var demo = false

    @Option(help: "Largest request body, in bytes.")
    var maxBodyBytes = 64 << 20

    @Option(help: "Seconds a connection may sit idle, or take to send a request, before it is closed.")
    var idleTimeout = 30

    @Option(help: "Most transactions in one push (devices send fewer at a time when refused).")
    var maxPushTransactions = 10_000

    @Option(help: "Requests per second per token (each instance).")
    var rateLimit: Double = 200

    @Option(help: "Seconds a device's clock may run ahead of this service's; a transaction stamped further ahead is stored with the service's clock.")
    var maxClockSkew = 60

    @Option(help: "Bytes of request bodies held at once; a push past it is answered 503 with Retry-After before its body is read (default: --max-body-bytes and 16 MiB more).")
    var maxInflightBytes: Int?

    @Option(help: "Requests working on PostgreSQL at once (long polls aside); past it, 503 with Retry-After.")
    var maxConcurrentRequests = 256

    @Option(help: "Largest attachment a space takes, in bytes (uploaded in chunks of 256 KiB, whatever --max-body-bytes says).")
    var maxAttachmentBytes: Int64 = 1 << 30

    @Flag(help: ArgumentHelp(
        "Development: start a throwaway PostgreSQL from the system's binaries (Debian's postgresql package, or initdb on the PATH) in a temporary folder, and make a token for --space; both are gone when the service stops.",
        discussion: "Takes the place of --postgres."))
    var throwawayPostgres = false

    @Option(help: "With --throwaway-postgres: the space the printed token opens.")
    var space = "dev"

    @Option(help: ArgumentHelp("Accept JWTs an app's backend signs (HS256) with the secret in this file, beside tokens; claims: sub, exp, spaces {name: owner|editor|viewer}, tables {name: [table]}.", valueName: "file"))
    var jwtSecretFile: String?

    @Option(help: ArgumentHelp("With --jwt-secret-file: the issuer (iss) a JWT must name.", valueName: "issuer"))
    var jwtIssuer: String?

    @Option(help: ArgumentHelp("Least level logged on standard error: trace, debug, info (a line per request, with its id), notice, warning, error or critical.", valueName: "level"))
    var logLevel = "warning"

    func validate() throws {
        // A service that synced the demo's tables for an app that has others would refuse every push.
        guard schema != nil || demo else {
            throw ValidationError("no schema: give --schema FILE (the tables devices sync, as SyncSchema JSON), or --demo to serve the demo domain's")
        }
        guard schema == nil || !demo else { throw ValidationError("--demo serves the demo domain's schema: leave out --schema") }
        guard maxBodyBytes > 0 else { throw ValidationError("--max-body-bytes: must be at least 1") }
        guard maxPushTransactions > 0 else { throw ValidationError("--max-push-transactions: must be at least 1") }
        guard idleTimeout > 0 else { throw ValidationError("--idle-timeout: must be at least 1") }
        guard rateLimit > 0 else { throw ValidationError("--rate-limit: must be more than 0") }
        guard maxClockSkew >= 0 else { throw ValidationError("--max-clock-skew: must be 0 or more") }
        guard (maxInflightBytes ?? maxBodyBytes) >= maxBodyBytes else { throw ValidationError("--max-inflight-bytes: must be at least --max-body-bytes (\(maxBodyBytes))") }
        guard maxConcurrentRequests > 0 else { throw ValidationError("--max-concurrent-requests: must be at least 1") }
        guard (0...SyncAttachment.largestSize).contains(maxAttachmentBytes) else {
            throw ValidationError("--max-attachment-bytes: 0 to \(SyncAttachment.largestSize), not \(maxAttachmentBytes)")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level: must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not '\(logLevel)'")
        }
    }

    func run() async throws {
        let registered = try loadSchema()
        guard throwawayPostgres else { return try await serve(registered, database: database, token: nil) }
        guard database.postgres == nil else { throw ValidationError("--throwaway-postgres starts its own PostgreSQL: leave out --postgres") }
        let server: ThrowawayPostgres
        do { server = try ThrowawayPostgres() } catch { throw ValidationError("--throwaway-postgres: \(error)") }
        defer { server.stop() }
        var throwaway = database
        throwaway.postgres = server.url()
        throwaway.postgresTLS = .disable
        FileHandle.standardOutput.write(Data("throwaway PostgreSQL at \(server.url()) (in \(server.directory); removed when the service stops)\n".utf8))
        try await serve(registered, database: throwaway, token: space)
    }

    /// Serves until interrupted; with `token`, first makes and prints a token for that space.
    private func serve(_ registered: SyncSchemaVersions, database: DatabaseOptions, token space: String?) async throws {
        try await database.probe()
        var settings = registered.versions.count == 1 ? SyncService.Configuration(schema: registered.newest) : SyncService.Configuration(versions: registered)
        settings.maximumBodyBytes = maxBodyBytes
        settings.largestAttachment = maxAttachmentBytes
        settings.maximumPushTransactions = maxPushTransactions
        settings.requestsPerSecond = rateLimit
        settings.burst = rateLimit * 2
        settings.maximumClockSkew = .seconds(maxClockSkew)
        settings.maximumInflightBytes = maxInflightBytes ?? SyncService.Configuration.defaultInflightBytes(maximumBodyBytes: maxBodyBytes)
        settings.maximumConcurrentRequests = maxConcurrentRequests
        var logger = Logger(label: "sluice-sync")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        // The process's metrics go to a Prometheus registry that /metrics exports.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        settings.metrics = registry
        if let jwtSecretFile {
            let secret: String
            do { secret = try String(contentsOfFile: jwtSecretFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) } catch {
                throw ValidationError("--jwt-secret-file: cannot read \(jwtSecretFile): \(error.localizedDescription)")
            }
            guard secret.utf8.count >= 32 else { throw ValidationError("--jwt-secret-file: the secret has \(secret.utf8.count) bytes; use 32 or more") }
            settings.jwt = await JWTAuthentication(secret: secret, issuer: jwtIssuer)
        }
        var databaseLogger = logger
        databaseLogger.logLevel = max(logger.logLevel, .warning)
        let client = PostgresClient(configuration: try database.configuration(), backgroundLogger: databaseLogger)
        let storage = SyncStorage(client: client, logger: databaseLogger)
        let service = try SyncService(storage: storage, configuration: settings)
        let host = host
        var app = Application(
            router: service.router(),
            // A request whose body stops arriving (a client retrying a request without its
            // body: swift-corelibs-foundation does after a dropped connection) is closed.
            server: .http1(configuration: .init(idleTimeout: .seconds(Int64(idleTimeout)))),
            configuration: .init(address: .hostname(host, port: port), serverName: "sluice-sync"),
            services: [client, service.listener],
            onServerRunning: { channel in
                // Unbuffered: a supervisor (or a test) reads this line to learn the port.
                FileHandle.standardOutput.write(Data("listening on http://\(host):\(channel.localAddress?.port ?? 0)\n".utf8))
            },
            logger: logger
        )
        app.beforeServerStarts {
            try await storage.prepare()
            if let space {
                let token = try await storage.addToken(space: space)
                FileHandle.standardOutput.write(Data("token for space '\(space)':\n\(token)\n".utf8))
            }
        }
        try await app.runService()
    }

    private func loadSchema() throws -> SyncSchemaVersions {
        if let schema {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: schema)) } catch {
                throw ValidationError("--schema: cannot read \(schema): \(error.localizedDescription)")
            }
            // Several versions ({"versions": [{"version": 1, "schema": ...}, ...]}), or one schema.
            if let versions = try? JSONDecoder().decode(SyncSchemaVersions.self, from: data) {
                do { return try SyncSchemaVersions(versions.versions) } catch {
                    throw ValidationError("--schema: \(schema): \(error.message)")
                }
            }
            do { return try SyncSchemaVersions([.init(version: 1, schema: JSONDecoder().decode(SyncSchema.self, from: data))]) } catch {
                throw ValidationError("--schema: \(schema) is neither a SyncSchema nor a SyncSchemaVersions: \(error)")
            }
        }
        let store = try Store.inMemory(migrations: DemoSchema.migrations)
        return try SyncSchemaVersions([.init(version: 1, schema: store.read { db in try SyncSchema(db, tables: DemoSchema.syncedTables) })])
    }
}

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "token", abstract: "Bearer tokens: each opens one user space.",
                                                    subcommands: [Add.self, Revoke.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Creates a token for a space (and the space when it is new); prints the token on its last line.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The user space the token opens.")
        var space: String

        func validate() throws {
            guard !space.isEmpty, space.utf8.count <= 100 else { throw ValidationError("--space: 1 to 100 bytes") }
        }

        func run() async throws {
            let space = space
            let token = try await database.withStorage { storage in try await storage.addToken(space: space) }
            print("token for space '\(space)':")
            print(token)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revokes a token: its requests get 401 from then on.")

        @OptionGroup var database: DatabaseOptions

        @Argument(help: "The token.")
        var token: String

        func run() async throws {
            let token = token
            let revoked = try await database.withStorage { storage in try await storage.revokeToken(token) }
            guard revoked else { throw ValidationError("no live token matches") }
            print("revoked")
        }
    }
}
