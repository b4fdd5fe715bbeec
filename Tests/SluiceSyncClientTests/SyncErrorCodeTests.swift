import Foundation
import SluiceSyncProtocol
import Testing

/// The error codes of the wire: one table from code to HTTP status, which the service
/// answers with and clients match on; unknown codes are 400; retryable ones say so.
@Suite(.timeLimit(.minutes(10))) struct SyncErrorCodeTests {
    @Test func eachCodeHasItsStatus() {
        let table: [(SyncErrorCode, Int)] = [
            (.invalid, 400), (.invalidSchema, 400), (.unauthorized, 401), (.forbidden, 403), (.notFound, 404),
            (.behind, 409), (.identityConflict, 409), (.replay, 409), (.attachmentMissing, 409), (.outOfOrder, 409), (.compacted, 410),
            (.tooLarge, 413), (.attachmentMismatch, 422), (.hashMismatch, 422), (.rateLimited, 429),
            (.saturated, 503), (.unavailable, 503), (SyncErrorCode(rawValue: "something_new"), 400),
        ]
        for (code, status) in table {
            #expect(code.status == status, "\(code)")
            #expect(code.isRetryable == (status == 429 || status == 503), "\(code)")
        }
        #expect(Set(table.map(\.0.rawValue)).count == table.count, "no two codes share a spelling")
    }

    @Test func aBodyTravelsWithItsCodeAsText() throws {
        let body = SyncErrorBody(.identityConflict, message: "device 'a' belongs to another token")
        let json = String(decoding: try JSONEncoder().encode(body), as: UTF8.self)
        #expect(json.contains(#""error":"identity_conflict""#), "\(json)")
        let decoded = try JSONDecoder().decode(SyncErrorBody.self, from: Data(json.utf8))
        #expect(decoded.code == .identityConflict && decoded == body)
        // A body from an older service, or a code this client does not know.
        let unknown = try JSONDecoder().decode(SyncErrorBody.self, from: Data(#"{"error":"later","message":"m"}"#.utf8))
        #expect(unknown.code.rawValue == "later" && unknown.code.status == 400)
    }
}
