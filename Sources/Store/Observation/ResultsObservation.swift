/// Turns a live query's states into what one kind of observer receives:
/// a `CollectionChange` (`FlatPresenter`) or a `SectionedResultsChange`
/// (`SectionPresenter`). Used only on the observation queue.
protocol ResultsPresenter: AnyObject {
    associatedtype Element: Sendable
    associatedtype Change: Sendable
    /// A value computed from each element that comes first in the order, if any.
    var sectionValue: LiveQuery<Element>.SectionValue? { get }
    /// Called before a live query reads its first state: a function to call
    /// with each of its elements as they are read, if the presenter wants them.
    func willRead(_ plan: QueryPlan) throws -> ((Element) -> Void)?
    /// The first state of a live query (also after an error).
    func initial(_ live: LiveQuery<Element>) throws -> Change
    /// Whether `update` reads the elements of the state before a commit
    /// (then the live query keeps the old values of the rows it changes).
    var readsPreviousElements: Bool { get }
    /// The change after a commit changed the live query's result from
    /// `before` (whose elements are given when `readsPreviousElements`);
    /// nil when the observer sees no difference (an aggregate that kept its value).
    func update(_ live: LiveQuery<Element>, before: OrderedTree<Void>, elements: ResultsSnapshot<Element>?, _ changeset: Changeset) -> Change?
    /// The query can no longer run.
    func error(_ error: StoreError) -> Change
}

extension ResultsPresenter {
    func willRead(_ plan: QueryPlan) throws -> ((Element) -> Void)? { nil }
}

/// Keeps one observer of a `Results` (or of its sections) up to date.
final class ResultsObservation<Presenter: ResultsPresenter>: StoreObservation, FailableObservation, TokenBearing, WindowResizable,
    @unchecked Sendable {
    // @unchecked Sendable: `live`, `failed` and the presenter are only
    // touched on the observation queue (or by `startImmediately`, before the
    // observation takes part in any event); the rest is immutable.
    typealias Element = Presenter.Element
    private let results: Results<Element>
    private let keyPaths: [String]?
    private let presenter: Presenter
    private let delivery: Delivery<Presenter.Change>
    private var live: LiveQuery<Element>?
    /// Whether `.error` was delivered since the last good state.
    private var failed = false
    weak var token: ObservationToken?

    init(results: Results<Element>, keyPaths: [String]?, presenter: Presenter, delivery: Delivery<Presenter.Change>) {
        self.results = results
        self.keyPaths = keyPaths
        self.presenter = presenter
        self.delivery = delivery
    }

    private func send(_ change: Presenter.Change) {
        delivery.send(change, unless: token)
    }

    private func makePlan(_ db: Database) throws -> QueryPlan {
        try results.plan(in: db, keyPaths: keyPaths)
    }

    /// Reads the first state: `.initial`, or `.error` when the query cannot
    /// run (nil when that error was reported already).
    private func begin(_ db: Database, pin: ReadPin) -> Presenter.Change? {
        do {
            let plan = try makePlan(db)
            // On a rollback-journal file the read transaction ends after
            // the event: the live query holds its elements.
            let live = try LiveQuery(plan: plan, decode: results.decode, sectionValue: presenter.sectionValue, db: db,
                                     pin: pin.transient ? nil : pin, window: try results.windowSource(filter: try results.filter?.get()),
                                     visit: try presenter.willRead(plan))
            let initial = try presenter.initial(live)
            self.live = live
            failed = false
            // A window's count comes after its first rows (it walks the whole result).
            if live.window?.needsCount == true {
                weak let target: (any WindowResizable)? = self
                results.host.perform { target?.countWindow() }
            }
            return initial
        } catch {
            return failure(error)
        }
    }

    func start(_ db: Database, pin: ReadPin) {
        if let initial = begin(db, pin: pin) { send(initial) }
    }

    /// The first state, read now: `.initial`, or `.error` at once when the
    /// query cannot run (a view model's first error is there with its first items).
    func startImmediately(_ db: Database, pin: ReadPin) -> Presenter.Change? {
        begin(db, pin: pin)
    }

    func update(_ db: Database, pin: ReadPin, changes: ChangedRows, silent: Bool) {
        guard let live else {
            // Failed before: try again whenever its table may have changed.
            guard changes.change(matching: results.table) != nil, let initial = begin(db, pin: pin), !silent else { return }
            send(initial)
            return
        }
        do {
            let before = live.tree
            let elements = presenter.readsPreviousElements ? live.snapshot : nil
            guard let changeset = try live.update(changes, db: db, pin: pin, makePlan: makePlan) else { return }
            // The presenter follows every state, delivered or not.
            let presented = presenter.update(live, before: before, elements: elements, changeset)
            guard let presented, !silent else { return }
            send(presented)
        } catch {
            // Its state is no longer known to be any commit's: start over
            // (with `.initial`) when it can run again.
            self.live = nil
            fail(error)
        }
    }

    func repin(at commit: UInt32, to new: ReadPin) {
        live?.repin(at: commit, to: new)
    }

    func fail(_ error: Error) {
        if let change = failure(error) { send(change) }
    }

    /// The `.error` to deliver for `error`; nil when one was delivered since the last good state.
    private func failure(_ error: Error) -> Presenter.Change? {
        guard !failed else { return nil }
        failed = true
        var storeError = error as? StoreError ?? StoreError(code: .error, message: "\(error)")
        if storeError.code == .unknownTable {
            storeError.message = "the observed table '\(results.table)' is gone: \(storeError.message)"
        }
        return presenter.error(storeError)
    }

    func fail(_ error: StoreError) {
        fail(error as Error)
    }

    /// Counts a window's result, and delivers its position (on the queue).
    func countWindow() {
        changeWindow { live, db, _ in try live.countWindow(db) ? Changeset() : nil }
    }

    /// Grows, shrinks or moves the window (on the queue), at the state last delivered.
    func resize(_ request: WindowRequest) {
        changeWindow { live, db, pin in try live.resizeWindow(request, db: db, pin: pin) }
    }

    /// Runs `body` on the window's live query (on the queue) at the state last delivered,
    /// through its read transaction (a rollback-journal file keeps no older state: at the
    /// newest), and delivers the changeset it returns; an error ends the live query, as a
    /// commit's would.
    private func changeWindow(_ body: (LiveQuery<Element>, Database, ReadPin?) throws -> Changeset?) {
        guard let live, token?.isInvalidated != true else { return }
        do {
            let before = live.tree
            let changeset: Changeset?
            if let pin = live.statePin {
                changeset = try pin.read { db in try body(live, db, pin) }
            } else {
                changeset = try results.host.read { db in try body(live, db, nil) }
            }
            guard let changeset, let presented = presenter.update(live, before: before, elements: nil, changeset) else { return }
            send(presented)
        } catch {
            self.live = nil
            fail(error)
        }
    }
}

/// Presents a live query as Realm's `RealmCollectionChange`: the snapshot and the changeset.
final class FlatPresenter<Element: Sendable>: ResultsPresenter {
    var sectionValue: LiveQuery<Element>.SectionValue? { nil }
    var readsPreviousElements: Bool { false }

    func initial(_ live: LiveQuery<Element>) -> CollectionChange<Element> {
        .initial(live.snapshot)
    }

    func update(_ live: LiveQuery<Element>, before: OrderedTree<Void>, elements: ResultsSnapshot<Element>?, _ changeset: Changeset) -> CollectionChange<Element>? {
        .update(live.snapshot, changeset)
    }

    func error(_ error: StoreError) -> CollectionChange<Element> {
        .error(error)
    }
}

extension ObservationHost {
    /// Starts a results observation: its first state on the observation
    /// queue (`.async`), or read now and handed to `initial` on this thread
    /// (`.immediate`).
    func start<Presenter>(_ observation: ResultsObservation<Presenter>, scheduling: ObservationScheduling,
                          initial: (Presenter.Change) -> Void) -> ObservationToken {
        switch scheduling {
        case .async:
            return register(observation)
        case .immediate:
            return registerImmediately(observation) { db, pin in
                if let change = observation.startImmediately(db, pin: pin) { initial(change) }
            }
        }
    }
}
