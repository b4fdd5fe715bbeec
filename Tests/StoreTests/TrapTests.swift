import Foundation
import Testing
@testable import Sluice

/// Programmer errors trap with a message (as swift-collections' checks do);
/// input never reaches these.
@Suite(.timeLimit(.minutes(10))) struct TrapTests {
    @Test func snapshotIndexOutOfBoundsTraps() async {
        await #expect(processExitsWith: .failure) {
            let snapshot = ResultsSnapshot(tree: OrderedTree<Int>(order: SortOrder(terms: [])))
            _ = snapshot[0]
        }
    }

    @Test func rowWithMismatchedColumnsTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = Row(columns: ["a", "b"], values: [.null])
        }
    }
}

/// Every place the sources can stop the program, each with why no input
/// (the API used as documented, another process's writes, the database
/// file, a sync peer) reaches it. A new trap fails this test until it is
/// justified here, or replaced by a thrown error.
@Suite(.timeLimit(.minutes(10))) struct TrapAuditTests {
    static let justified: [String: String] = [
        "Store/Observation/SectionedResults.swift: precondition(position >= 0 && position < count, \"Section index out of bounds\")":
            "an index out of bounds, as Array's subscript traps: the caller's bug, not input",
        "Store/Observation/SectionedResults.swift: precondition(position >= 0 && position < range.count, \"Index out of bounds\")":
            "an index out of bounds, as Array's subscript traps",
        "Store/LiveQuery/ResultsSnapshot.swift: precondition(position >= 0 && position < tree.count, \"Index out of bounds\")":
            "an index out of bounds, as Array's subscript traps",
        "Store/LiveQuery/ResultsSnapshot.swift: preconditionFailure(\"cannot read element \\(position) of a snapshot: \\(error)\")":
            "a non-throwing Collection subscript over rows read lazily: reached only when the disk fails (an I/O error) or a row "
            + "a snapshot holds was deleted behind the change log in the same look as a logged commit; a commit that logs nothing, "
            + "REPLACE through any unique index, a dropped trigger and a replaced file are all re-read or reported "
            + "(ForeignReplaceTests, ReplacedFileTests). element(at:) and elements(in:) throw instead.",
        "Store/LiveQuery/ResultsSnapshot.swift: preconditionFailure(\"cannot read the elements of a snapshot: \\(error)\")":
            "the iterator of the same collection: as the subscript",
        "Store/Records/Row.swift: precondition(columns.count == values.count, \"a row needs one value per column\")":
            "a caller building a Row by hand with mismatched arrays; rows read from SQLite are built with one value per column",
    ]

    @Test func everyTrapInTheSourcesIsJustified() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let patterns = ["fatalError(", "preconditionFailure(", "precondition(", "try!", "assertionFailure(", "unsafelyUnwrapped"]
        var found: Set<String> = []
        let files = FileManager.default.enumerator(atPath: sources.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        #expect(files.count > 50, "the sources were found")
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//"), patterns.contains(where: { code.contains($0) }) else { continue }
                found.insert("\(file): \(code)")
            }
        }
        #expect(found.subtracting(Self.justified.keys).sorted() == [], "traps without a justification")
        #expect(Set(Self.justified.keys).subtracting(found).sorted() == [], "justifications of traps that are gone")
    }
}
