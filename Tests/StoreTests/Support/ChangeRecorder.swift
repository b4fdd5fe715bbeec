import Foundation
@testable import Sluice

/// Records what an observation delivers, for exact-sequence assertions.
final class ChangeRecorder<Element: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `events` is guarded by `lock`.
    private let lock = NSLock()
    private var events: [CollectionChange<Element>] = []
    private(set) var token: ObservationToken?

    init(_ results: Results<Element>, keyPaths: [String]? = nil) {
        token = results.observe(keyPaths: keyPaths) { [weak self] change in
            guard let self else { return }
            self.lock.lock()
            self.events.append(change)
            self.lock.unlock()
        }
    }

    /// Takes the events recorded so far.
    func take() -> [CollectionChange<Element>] {
        lock.lock()
        defer { events = []; lock.unlock() }
        return events
    }

    /// Waits (without sleeping the test thread more than needed) until at
    /// least `count` events are recorded, or the deadline passes.
    func wait(for count: Int, timeout: TimeInterval = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            lock.lock()
            let have = events.count
            lock.unlock()
            if have >= count { return true }
            usleep(1_000)
        }
        return false
    }
}

/// A changeset in a compact, comparable form.
struct Changes: Equatable, CustomStringConvertible {
    var deletions: [Int] = []
    var insertions: [Int] = []
    var modifications: [Int] = []
    var modificationsNew: [Int] = []
    var moves: [[Int]] = []

    init(deletions: [Int] = [], insertions: [Int] = [], modifications: [Int] = [], modificationsNew: [Int]? = nil, moves: [[Int]] = []) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.modificationsNew = modificationsNew ?? modifications
        self.moves = moves
    }

    init?<T>(_ change: CollectionChange<T>) {
        guard case .update(_, let deletions, let insertions, let modifications) = change else { return nil }
        self.init(deletions: deletions, insertions: insertions, modifications: modifications,
                  modificationsNew: change.modificationsNew, moves: change.moves.map { [$0.from, $0.to] })
    }

    var description: String {
        "del \(deletions) ins \(insertions) mod \(modifications)→\(modificationsNew) moves \(moves)"
    }
}

/// Records the events of any observation, for exact-sequence assertions.
final class EventRecorder<Event: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `events` is guarded by `lock`.
    private let lock = NSLock()
    private var events: [Event] = []
    private(set) var token: ObservationToken?

    /// `start` begins observing, handing each event to the closure it gets.
    init(_ start: (@escaping @Sendable (Event) -> Void) -> ObservationToken) {
        token = start { [weak self] event in
            guard let self else { return }
            self.lock.lock()
            self.events.append(event)
            self.lock.unlock()
        }
    }

    /// Takes the events recorded so far.
    func take() -> [Event] {
        lock.lock()
        defer { events = []; lock.unlock() }
        return events
    }
}
