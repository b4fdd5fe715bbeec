import Foundation
import HTTPTypes
import Hummingbird

/// Requests answered once their body is in, their work going on in the background
/// (`Prefer: respond-async`, RFC 7240; ``DeferredAnswers``).
extension SyncService {
    static let preferHeader = HTTPField.Name("Prefer")!
    static let preferenceAppliedHeader = HTTPField.Name("Preference-Applied")!

    /// Whether the request prefers to be answered before its work is done: its `Prefer`
    /// header names `respond-async` (among other preferences, in any case).
    static func answerLater(_ request: Request) -> Bool {
        request.headers[values: preferHeader].contains { field in
            field.split(separator: ",").contains { preference in
                preference.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "respond-async"
            }
        }
    }

    /// `202 Accepted`: the answer is to be fetched from `/v1/answers/<id>`.
    static func accepted(_ id: String) -> Response {
        Response(status: .accepted, headers: [.location: "/v1/answers/\(id)", preferenceAppliedHeader: "respond-async"])
    }
}
