import Foundation
import SluiceMacros
import Testing

/// `Results` as Realm's: SQL-backed members, iteration, freeze; the four-value `.update`.
@Suite(.timeLimit(.minutes(10))) struct ResultsTests {
    func filledStore(_ count: Int = 10) throws -> Store {
        let store = try Store.inMemory(migrations: schema)
        try store.write { tx in
            for index in 0..<count {
                try tx.insert(task("T\(index)", project: Int64(index % 3), priority: index.isMultiple(of: 2) ? .high : .low))
            }
        }
        return store
    }

    /// Past the end, a query that cannot run, and a position that was in
    /// range before a write deleted rows: errors, not a stopped program.
    @Test func positionsWithoutARowThrow() throws {
        let store = try filledStore()
        let high = store.objects(TaskItem.self).filter(\.priority == .high).sorted(by: \.title, ascending: false)
        #expect(throws: StoreError.self) { try high[5] }
        #expect(throws: StoreError.self) { try high[-1] }
        #expect(throws: StoreError.self) { try store.objects(TaskItem.self).filter("no_such_column > 1")[0] }
        let count = high.count
        #expect(try high[count - 1].title == "T0")
        try store.write { tx in try tx.execute(sql: "DELETE FROM task_item WHERE title = 'T0'") }
        #expect(throws: StoreError.self) { try high[count - 1] }
    }

    @Test func membersAreAnsweredBySQL() throws {
        let store = try filledStore()
        let high = store.objects(TaskItem.self).filter(\.priority == .high).sorted(by: \.title, ascending: false)
        #expect(high.count == 5)
        #expect(!high.isEmpty)
        #expect(high.first?.title == "T8")
        #expect(high.last?.title == "T0")
        #expect(try high[1].title == "T6")
        #expect(high.element(at: 5) == nil)
        #expect(high.map(\.title) == ["T8", "T6", "T4", "T2", "T0"])
        #expect(Array(high).count == 5)
        var seen: [String] = []
        for item in high { seen.append(item.title) }
        #expect(seen == ["T8", "T6", "T4", "T2", "T0"])
        // A limit applies to every member.
        let two = high.limit(2)
        #expect(two.count == 2 && two.last?.title == "T6" && two.element(at: 2) == nil)
        // Nothing matches.
        let none = store.objects(TaskItem.self).filter(\.title == "nope")
        #expect(none.isEmpty && none.count == 0 && none.first == nil && none.last == nil)
        // A query that cannot run (its table is missing) is empty as a sequence; fetch says why.
        let broken = store.rows(in: "no_such_table")
        #expect(broken.count == 0 && broken.first == nil)
        #expect(throws: StoreError.self) { try broken.fetchCount() }
    }

    @Test func eachMemberSeesTheLatestCommitAndFreezeKeepsOne() throws {
        let store = try filledStore(3)
        let all = store.objects(TaskItem.self).sorted(by: \.title)
        let frozen = try all.freeze()
        try store.write { tx in try tx.insert(task("T9")) }
        #expect(all.count == 4 && all.last?.title == "T9")
        #expect(frozen.count == 3 && frozen.map(\.title) == ["T0", "T1", "T2"])
    }

    @Test func distinctKeepsTheFirstOfEachValue() throws {
        let store = try filledStore()
        let firstPerProject = store.objects(TaskItem.self).sorted(by: \.title, ascending: false).distinct(by: [\.projectID])
        #expect(firstPerProject.map(\.title) == ["T9", "T8", "T7"])
        #expect(firstPerProject.count == 3)
        #expect(store.objects(TaskItem.self).distinct(by: ["priority"]).map(\.title) == ["T0", "T1"])
    }

    /// Realm's four-value pattern compiles and binds as in Realm; moves are a property.
    @Test func realmsFourValueSwitchCompiles() throws {
        let store = try filledStore(3)
        let deliveries = Deliveries<String>()
        let results = store.objects(TaskItem.self).sorted(by: \.title)
        let token = results.observe(on: deliveries.queue) { change in
            switch change {
            case .initial(let items):
                deliveries.append("initial \(items.count)")
            case .update(_, let deletions, let insertions, let modifications):
                deliveries.append("update \(deletions) \(insertions) \(modifications) moves \(change.moves.map { [$0.from, $0.to] }) new \(change.modificationsNew)")
            case .error(let error):
                deliveries.append("error \(error)")
            }
        }
        deliveries.wait(for: 1)
        try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.title = "T5" } }        // T0 moves to the end
        try store.write { tx in try tx.update(TaskItem.self, id: 2) { $0.isDone = true } }
        deliveries.wait(for: 3)
        #expect(deliveries.settle(store) == [
            "initial 3",
            "update [0] [2] [] moves [[0, 2]] new []",
            "update [] [] [0] moves [] new [0]",
        ])
        token.invalidate()
    }
}
