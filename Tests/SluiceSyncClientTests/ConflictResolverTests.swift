import Foundation
@testable import SluiceSyncClient
import SluiceSyncProtocol
import Sluice
import Testing

/// The conflict rules as a table: each policy and the delete rule, for every relation of
/// clocks and device ids, without a store or a service.
@Suite(.timeLimit(.minutes(10))) struct ConflictResolverTests {
    static let earlier = HybridClock(rawValue: 1_000 << 16)
    static let later = HybridClock(rawValue: 2_000 << 16)

    struct Case: CustomTestStringConvertible {
        var policy: ConflictPolicy
        var local: ConflictResolver.Local?
        var remote: ConflictResolver.Remote
        var expected: ConflictResolver.Column
        var name: String
        var testDescription: String { name }
    }

    static let mine = ConflictResolver.Local(clock: earlier, value: .text("mine"), base: .text("base"))
    static let mineLater = ConflictResolver.Local(clock: later, value: .text("mine"), base: .text("base"))

    static let cases: [Case] = [
        Case(policy: .lastWriterWins, local: nil, remote: .init(clock: earlier, device: "b"), expected: .applyRemote, name: "no local value: applied"),
        Case(policy: .lastWriterWins, local: mine, remote: .init(clock: later, device: "b"), expected: .applyRemote, name: "LWW: later remote wins"),
        Case(policy: .lastWriterWins, local: mineLater, remote: .init(clock: earlier, device: "b"), expected: .keepLocal, name: "LWW: later local wins"),
        // Equal clocks: the value the service holds wins, whoever wrote it (a subset page
        // names no writer per column, and the history and subset appliers must agree).
        Case(policy: .lastWriterWins, local: mine, remote: .init(clock: earlier, device: "z"), expected: .applyRemote, name: "LWW: equal clocks, the pulled value wins (larger remote id)"),
        Case(policy: .lastWriterWins, local: mine, remote: .init(clock: earlier, device: "a"), expected: .applyRemote, name: "LWW: equal clocks, the pulled value wins (smaller remote id)"),
        Case(policy: .lastWriterWins, local: mine, remote: .init(clock: earlier, device: ""), expected: .applyRemote, name: "LWW: equal clocks, the pulled value wins (a subset page: no writer)"),
        Case(policy: .serverWins, local: mineLater, remote: .init(clock: earlier, device: "b"), expected: .applyRemote, name: "server wins even when older"),
        Case(policy: .deviceWins, local: mine, remote: .init(clock: later, device: "z"), expected: .keepLocal, name: "device wins even when older"),
        Case(policy: .merge { conflict in .text("\(conflict.base.map { "\($0)" } ?? "-")+\(conflict.local)+\(conflict.remote)") },
             local: mine, remote: .init(clock: later, device: "b"), expected: .merge(.text("base+mine+theirs")), name: "merge sees base, local and remote"),
    ]

    @Test(arguments: cases)
    func columns(_ row: Case) {
        var configuration = SyncConfiguration(tables: ["person"])
        configuration.columnPolicies["person.city"] = row.policy
        let resolver = ConflictResolver(configuration: configuration)
        #expect(resolver.resolve(table: "person", column: "CITY", local: row.local, remote: .text("theirs"), from: row.remote) == row.expected)
    }

    @Test func policiesApplyByColumnThenTableThenDefault() {
        var configuration = SyncConfiguration(tables: ["person", "package"])
        configuration.defaultPolicy = .deviceWins
        configuration.tablePolicies["Person"] = .serverWins
        configuration.columnPolicies["person.age"] = .lastWriterWins
        let resolver = ConflictResolver(configuration: configuration)
        let remote = ConflictResolver.Remote(clock: Self.earlier, device: "b")
        #expect(resolver.resolve(table: "person", column: "age", local: Self.mineLater, remote: .null, from: remote) == .keepLocal)
        #expect(resolver.resolve(table: "person", column: "city", local: Self.mineLater, remote: .null, from: remote) == .applyRemote)
        #expect(resolver.resolve(table: "package", column: "created_at", local: Self.mine, remote: .null, from: .init(clock: Self.later, device: "z")) == .keepLocal)
    }

    @Test(arguments: [(DeleteConflictRule.deleteWins, true, ConflictResolver.Row.deleted), (.deleteWins, false, .deleted),
                      (.updateWins, true, .kept), (.updateWins, false, .deleted)])
    func deleteOfARowChangedHere(rule: DeleteConflictRule, changed: Bool, expected: ConflictResolver.Row) {
        var configuration = SyncConfiguration(tables: ["person"])
        configuration.deleteRule = rule
        #expect(ConflictResolver(configuration: configuration).resolveDelete(ofRowChangedHere: changed) == expected)
    }

    @Test(arguments: [(DeleteConflictRule.deleteWins, ConflictResolver.Row.deleted), (.updateWins, .kept)])
    func updateOfARowDeletedHere(rule: DeleteConflictRule, expected: ConflictResolver.Row) {
        var configuration = SyncConfiguration(tables: ["person"])
        configuration.deleteRule = rule
        #expect(ConflictResolver(configuration: configuration).resolveUpdateOfRowDeletedHere() == expected)
    }
}
