import Foundation
import JWTKit
import SluiceSyncProtocol

/// Bearer JWTs that an app's own backend issues, signed with a secret it shares with the
/// service (HS256), so that its users need no token from `sluice-sync`:
///
/// ```json
/// {"sub": "bob@example.com", "exp": 1798761600,
///  "spaces": {"team": "editor", "family": "viewer"}, "tables": {"team": ["person"]}}
/// ```
///
/// - `sub`: the member's name in the spaces; it owns the devices it pushes under.
/// - `exp`: required; an expired JWT gets 401.
/// - `spaces`: the spaces it opens, each with a ``SyncRole``; a request says which one in
///   the `Sluice-Space` header (``SyncConfiguration/space``), unless it names one only.
/// - `tables`: for an editor of a space, the only tables it may write there.
/// - `iss`: checked when the service is given an issuer.
///
/// A space a JWT names is created when it is new. Tokens (`slt_...`) keep working beside JWTs.
public struct JWTAuthentication: Sendable {
    /// The claims of a Sluice JWT.
    public struct Claims: JWTPayload, Equatable {
        /// The member's name.
        public var sub: SubjectClaim
        /// When it expires.
        public var exp: ExpirationClaim
        /// Who issued it.
        public var iss: IssuerClaim?
        /// The spaces it opens, by name, with a role in each.
        public var spaces: [String: SyncRole]
        /// For an editor of a space, the only tables it may write there.
        public var tables: [String: [String]]?

        /// Claims.
        ///
        /// - Parameters:
        ///   - subject: the member's name.
        ///   - expiration: when the JWT expires.
        ///   - issuer: who issues it.
        ///   - spaces: the spaces it opens, with a role in each.
        ///   - tables: for an editor of a space, the only tables it may write there.
        public init(subject: String, expiration: Date, issuer: String? = nil, spaces: [String: SyncRole], tables: [String: [String]]? = nil) {
            sub = SubjectClaim(value: subject)
            exp = ExpirationClaim(value: expiration)
            iss = issuer.map { IssuerClaim(value: $0) }
            self.spaces = spaces
            self.tables = tables
        }

        /// Checks the expiry (the signature is checked before).
        public func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }

    let keys: JWTKeyCollection
    let issuer: String?

    /// Verifies JWTs signed with HMAC-SHA256 and `secret`.
    ///
    /// - Parameters:
    ///   - secret: the secret the app's backend signs with (32 bytes or more of randomness).
    ///   - issuer: when given, the `iss` a JWT must carry.
    public init(secret: String, issuer: String? = nil) async {
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.issuer = issuer
    }

    /// The one algorithm JWTs may name in their header.
    static let algorithm = "HS256"

    /// The `alg` a JWT's header names (nil when the header is not base64url JSON with one).
    static func headerAlgorithm(_ bearer: String) -> String? {
        guard let header = bearer.split(separator: ".", omittingEmptySubsequences: false).first, header.utf8.count <= 1_024 else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object["alg"] as? String
    }

    /// Whether a bearer is a JWT (three base64url parts), not a `slt_` token.
    static func isJWT(_ bearer: String) -> Bool {
        !bearer.hasPrefix("slt_") && bearer.split(separator: ".", omittingEmptySubsequences: false).count == 3
    }

    /// The claims of a valid JWT.
    ///
    /// - Throws: `SyncErrorBody` (`unauthorized`) naming what is wrong: the signature, the
    ///   expiry, the issuer, or the claims' shape.
    func verify(_ bearer: String) async throws -> Claims {
        // The key collection signs and verifies with its one key whatever the header
        // says: a header naming another algorithm is refused here.
        let algorithm = Self.headerAlgorithm(bearer)
        guard algorithm == Self.algorithm else {
            throw SyncErrorBody(.unauthorized, message: "the JWT is not valid: its header's algorithm is \(algorithm.map { "'\($0)'" } ?? "missing"), and this service accepts \(Self.algorithm) only")
        }
        let claims: Claims
        do {
            claims = try await keys.verify(bearer, as: Claims.self)
        } catch let error as JWTError {
            throw SyncErrorBody(.unauthorized, message: "the JWT is not valid: \(error.reason ?? "\(error.errorType)")")
        } catch {
            throw SyncErrorBody(.unauthorized, message: "the JWT is not valid: \(error)")
        }
        if let issuer, claims.iss?.value != issuer {
            throw SyncErrorBody(.unauthorized, message: "the JWT's issuer is not '\(issuer)'")
        }
        return claims
    }
}
