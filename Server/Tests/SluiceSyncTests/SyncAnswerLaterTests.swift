import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceSyncProtocol
import SluiceTestSupport
import Testing

/// A request that prefers `respond-async` (RFC 7240) is answered `202 Accepted` once its
/// body is in, and its own answer is fetched from `Location` (`GET /v1/answers/<id>`), once,
/// by the caller that made it. A device on Linux asks so for bodies over 64 KiB
/// (URLSession there spins while such a request waits for its answer).
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncAnswerLaterTests {
    struct Answer {
        var status: Int
        var body: String
        var location: String?
        var applied: String?
    }

    static func send(_ url: URL, method: String = "GET", body: Data? = nil, token: String, preferring: String? = nil) async throws -> Answer {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.httpBody = body
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let preferring { request.setValue(preferring, forHTTPHeaderField: "Prefer") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return Answer(status: http?.statusCode ?? 0, body: String(decoding: data, as: UTF8.self),
                      location: http?.value(forHTTPHeaderField: "Location"), applied: http?.value(forHTTPHeaderField: "Preference-Applied"))
    }

    static func push(_ space: SyncSpace, _ changes: [SyncChange], local: Int64 = 1) throws -> Data {
        try JSONEncoder().encode(PushRequest(device: "tablet", base: space.head(), transactions: [
            SyncTransaction(device: "tablet", local: local, clock: HybridClock(date: Date()), changes: changes),
        ]))
    }

    /// A push of one person.
    static func ada(_ space: SyncSpace) throws -> Data {
        try push(space, [
            SyncChange(table: "person", id: "p1", op: .insert, values: ["first_name": .text("Ada"), "last_name": .text("A"), "city": .text("Oslo")]),
        ])
    }

    static func answerURL(_ space: SyncSpace, _ location: String, wait: Int = 10) throws -> URL {
        let path = try #require(location.hasPrefix("/v1/answers/") ? location.dropFirst() : nil, "\(location)")
        return try #require(URL(string: "\(space.service.url.absoluteString)/\(path)?wait=\(wait)"))
    }

    @Test func aPushPreferringRespondAsyncIsAnsweredFromItsLocationOnceByItsCaller() async throws {
        let space = try SyncSpace()
        let taken = try await Self.send(space.service.url.appendingPathComponent("v1/push"), method: "POST", body: Self.ada(space),
                                        token: space.token, preferring: "wait=5, respond-async")
        #expect(taken.status == 202, "\(taken)")
        #expect(taken.applied == "respond-async")
        let location = try #require(taken.location)
        let url = try Self.answerURL(space, location)

        // Another token of the same space, and a token of another space, do not get it.
        let sameSpace = try SyncServiceProcess.addToken(postgres: space.postgres, space: "test")
        let otherSpace = try SyncServiceProcess.addToken(postgres: space.postgres, space: "other")
        for token in [sameSpace, otherSpace] {
            let refused = try await Self.send(url, token: token)
            #expect(refused.status == 404 && refused.body.contains("answer_unknown"), "\(refused)")
        }
        // The caller gets the push's own answer, then nothing: it is taken once.
        let answer = try await Self.send(url, token: space.token)
        #expect(answer.status == 200, "\(answer)")
        let response = try JSONDecoder().decode(PushResponse.self, from: Data(answer.body.utf8))
        #expect(response.head == (try space.head()))
        #expect(try SyncRequests.storedRows(space, table: "person").count == 1)
        let again = try await Self.send(url, token: space.token)
        #expect(again.status == 404 && again.body.contains("answer_unknown"), "\(again)")
        let unknown = try await Self.send(try Self.answerURL(space, "/v1/answers/0f0f0f0f-0000-4000-8000-000000000000"), token: space.token)
        #expect(unknown.status == 404 && unknown.body.contains("answer_unknown"), "\(unknown)")
    }

    @Test func aRefusalTravelsInTheAnswer() async throws {
        let space = try SyncSpace()
        let body = try Self.push(space, [SyncChange(table: "no_such_table", id: "x", op: .insert, values: ["a": .integer(1)])])
        let taken = try await Self.send(space.service.url.appendingPathComponent("v1/push"), method: "POST", body: body,
                                        token: space.token, preferring: "respond-async")
        #expect(taken.status == 202, "\(taken)")
        let answer = try await Self.send(try Self.answerURL(space, try #require(taken.location)), token: space.token)
        #expect(answer.status == 400 && answer.body.contains("no_such_table"), "\(answer)")
        #expect(try space.head() == 0)
    }

    @Test func aRequestWithoutThePreferenceIsAnsweredAsBefore() async throws {
        let space = try SyncSpace()
        let answer = try await Self.send(space.service.url.appendingPathComponent("v1/push"), method: "POST", body: Self.ada(space),
                                         token: space.token, preferring: "return=minimal")
        #expect(answer.status == 200 && answer.location == nil, "\(answer)")
    }

    @Test func aDevicesLargePushIsAnsweredLaterOnLinux() async throws {
        let space = try SyncSpace()
        let device = try space.device()
        // One transaction of 2,000 people: a body of about 300 KiB.
        try device.sql("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
            INSERT INTO person (first_name, last_name, city) SELECT 'First ' || i, 'Last ' || i, 'City ' || (i % 50) FROM n
            """)
        try await device.client.sync()
        let other = try space.device()
        try await other.client.sync()
        #expect(try other.rows("SELECT count(*) FROM person") == ["2000"])
        let metrics = try await SyncOperationTests.get(space.service.url, "metrics")
        let fetched = SyncOperationTests.sample(metrics.body, #"sluice_sync_requests_total{route="answers",status="200"}"#) ?? 0
        #if canImport(FoundationNetworking)
        #expect(fetched >= 1, "\(metrics.body)")
        #else
        #expect(fetched == 0, "\(metrics.body)")
        #endif
    }
}
