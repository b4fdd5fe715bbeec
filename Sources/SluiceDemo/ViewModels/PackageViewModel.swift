import Foundation
import OpenCombineShim
import SluiceViewModels
import Sluice

/// The package editor: the recipient's names and street, kept in two-way
/// sync with the store, a summary, and the contents.
///
/// Model → view model: property publishers. View model → model: each
/// `@Published` field, minus its first value and duplicates, is written
/// back; a value that just came from the store is not written again (no
/// echo loop). Changes made elsewhere (another view model, another
/// process) arrive without a reload.
@MainActor
public final class PackageViewModel: ObservableObject {
    /// One item of the package.
    public struct ContentItem: ViewModelItem, Identifiable, Equatable, Sendable {
        /// The item's id.
        public let id: Int64
        /// "title weight" (weight in grams).
        public let description: String
        /// Makes an item.
        ///
        /// - Parameter content: the package's item.
        public init(_ content: PackageContent) {
            id = content.id ?? 0
            description = "\(content.title) \(content.weight)"
        }
    }

    /// The recipient's first name (two-way).
    @Published public var recipientFirstName = ""
    /// The recipient's last name (two-way).
    @Published public var recipientLastName = ""
    /// The recipient's street (two-way).
    @Published public var street = ""
    /// The package's contents, live, in position order.
    public let contents: ObservableArray<ContentItem>
    /// The recipient as last read from the store.
    @Published public private(set) var recipient: Person?
    /// The contents' total weight in grams: a live sum, kept from each commit's changed items.
    @Published public private(set) var totalWeight = 0
    /// How many items the package holds: a live count.
    @Published public private(set) var itemCount = 0
    /// How many packages (this one included) go to the recipient's city: a
    /// live count over a relationship path (`recipient.city == …`), exact
    /// when packages or people change.
    @Published public private(set) var packagesToRecipientCity = 0
    /// The last error from a write.
    @Published public private(set) var lastError: StoreError?
    /// Whether `undo()` has an edit of this editor to undo.
    @Published public private(set) var canUndo = false
    /// Whether `redo()` has an undone edit to redo.
    @Published public private(set) var canRedo = false

    /// Titles for `addRandomItem()`.
    public static let itemTitles = ["Light bulb", "Books", "Tea", "Socks", "Chocolate", "Postcards"]

    private let store: Store
    private let writes: WriteQueue
    private let packageID: Int64
    private let recipientID: Int64
    private var cancellables = Set<AnyCancellable>()
    private var fields: [String: ReferenceWritableKeyPath<PackageViewModel, String>] = [:]
    private var fromStore: [String: String] = [:]
    /// This editor's change-log author: its own transactions are undoable.
    private let author = "package-editor-\(UUID().uuidString.prefix(8))"
    private var seen: HistoryToken?
    private var undoStack: [LoggedTransaction] = []
    private var redoStack: [LoggedTransaction] = []

    /// An editor for a package.
    ///
    /// - Throws: `.notFound` when the package does not exist.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - packageID: the package to edit.
    public init(store: Store, packageID: Int64) throws {
        self.store = store
        writes = WriteQueue(store: store)
        self.packageID = packageID
        guard let package = try store.read({ db in try db.fetchOne(Package.self, id: packageID) }) else {
            throw StoreError(code: .notFound, message: "no package with id \(packageID)")
        }
        recipientID = package.recipientID
        let items = store.objects(PackageContent.self).where { $0.packageID == packageID }
        contents = ObservableArray(items.sorted(by: \.position))
        items.aggregates.sum(of: \.weight).publisher
            .sink(receiveCompletion: { _ in }, receiveValue: { [weak self] grams in self?.totalWeight = grams })
            .store(in: &cancellables)
        items.aggregates.count.publisher
            .sink(receiveCompletion: { _ in }, receiveValue: { [weak self] count in self?.itemCount = count })
            .store(in: &cancellables)
        $recipient.map { $0?.city }.removeDuplicates().sink { [weak self] city in self?.countPackages(to: city) }.store(in: &cancellables)

        writes.failed = { [weak self] error in self?.lastError = error }
        writes.author = author
        seen = try? store.currentToken
        bind(\.recipientFirstName, $recipientFirstName, to: \Person.firstName, column: "first_name") { $0.firstName = $1 }
        bind(\.recipientLastName, $recipientLastName, to: \Person.lastName, column: "last_name") { $0.lastName = $1 }
        bind(\.street, $street, to: \Person.street, column: "street") { $0.street = $1.isEmpty ? nil : $1 }
        store.objectValuePublisher(Person.self, id: recipientID)
            .sink { @Sendable [weak self] person in
                DispatchQueue.main.async { MainActor.assumeIsolated { self?.recipient = person } }
            }
            .store(in: &cancellables)
        contents.itemsPublisher.sink { [weak self] _ in self?.objectWillChange.send() }.store(in: &cancellables)
    }

    /// Model → view model through a property publisher; view model → model
    /// through a typed write (`assign` sets the property from the field's
    /// text), skipping the value that came from the store.
    private func bind<Value: Equatable & Sendable>(
        _ field: ReferenceWritableKeyPath<PackageViewModel, String>, _ published: Published<String>.Publisher,
        to property: KeyPath<Person, Value> & Sendable, column: String,
        assign: @escaping @Sendable (inout Person, String) -> Void
    ) {
        fields[column] = field
        store.propertyValuePublisher(Person.self, id: recipientID, property)
            .sink { @Sendable [weak self] value in
                let text = (value as? String) ?? (value as? String?).flatMap { $0 } ?? ""
                DispatchQueue.main.async { MainActor.assumeIsolated { self?.received(text, column: column) } }
            }
            .store(in: &cancellables)
        published
            .dropFirst()
            .removeDuplicates()
            .sink { [weak self] text in
                MainActor.assumeIsolated {
                    guard let self, self.fromStore[column] != text else { return }
                    self.fromStore[column] = text
                    let id = self.recipientID
                    self.writes.enqueue { tx in try tx.update(Person.self, id: id) { assign(&$0, text) } }
                }
            }
            .store(in: &cancellables)
    }

    private var cityCount: AnyCancellable?

    /// Follows how many packages go to `city` (none when it is unknown).
    private func countPackages(to city: String?) {
        guard let city else {
            cityCount = nil
            packagesToRecipientCity = 0
            return
        }
        // The query names the demo schema's columns: it fails only on a store without them.
        guard let packages = try? store.objects(Package.self).filter("recipient.city == $0", city) else {
            cityCount = nil
            packagesToRecipientCity = 0
            return
        }
        cityCount = packages.aggregates.count.publisher
            .sink(receiveCompletion: { _ in }, receiveValue: { [weak self] count in self?.packagesToRecipientCity = count })
    }

    /// A value read from the store: shown, and remembered so it is not written back.
    private func received(_ text: String, column: String) {
        guard let field = fields[column] else { return }
        fromStore[column] = text
        if self[keyPath: field] != text { self[keyPath: field] = text }
    }

    /// "Recipient: …", "Postal address: …", "Contents: title weight, … (n items, w g)".
    public var summary: String {
        let name = [recipientFirstName, recipientLastName].filter { !$0.isEmpty }.joined(separator: " ")
        let place = [recipient?.postalCode, recipient?.city].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
        let address = [street, place, recipient?.country ?? ""].filter { !$0.isEmpty }.joined(separator: ", ")
        let items = contents.items.map(\.description).joined(separator: ", ")
        let totals = "(\(itemCount) item\(itemCount == 1 ? "" : "s"), \(totalWeight) g)"
        return "Recipient: \(name)\nPostal address: \(address)\nContents: \(items) \(totals)"
    }

    /// Adds an item with a title from a small list and a weight of 200–300 g.
    public func addRandomItem() async {
        var generator = SystemRandomNumberGenerator()
        await addItem(title: Self.itemTitles.randomElement(using: &generator) ?? "Light bulb", weight: Int.random(in: 200...300, using: &generator))
    }

    /// Adds an item at the end of the contents.
    ///
    /// - Parameters:
    ///   - title: the item's title.
    ///   - weight: its weight in grams.
    public func addItem(title: String, weight: Int) async {
        let packageID = packageID
        await writes.perform { tx in
            let last = try tx.fetchAll(PackageContent.self, filter: Column("package_id") == packageID,
                                       orderBy: [Ordering("position", descending: true)], limit: 1).first
            try tx.insert(PackageContent(packageID: packageID, title: title, weight: weight, position: (last?.position ?? -1) + 1))
        }
    }

    // MARK: - Undo and redo (through the change log)

    /// Undoes this editor's last edit (a field, an added item) by reverting
    /// its transaction; refused with `lastError` (`.conflict`) when someone
    /// changed the same values since.
    public func undo() async {
        await step(from: \.undoStack, to: \.redoStack, author: author + ".undo")
    }

    /// Redoes the last undone edit.
    public func redo() async {
        await step(from: \.redoStack, to: \.undoStack, author: author + ".redo")
    }

    /// Reverts the top transaction of one stack and pushes the revert on the
    /// other (or puts it back when the revert is refused).
    private func step(from source: ReferenceWritableKeyPath<PackageViewModel, [LoggedTransaction]>,
                      to target: ReferenceWritableKeyPath<PackageViewModel, [LoggedTransaction]>, author: String) async {
        await writes.idle()
        collectEdits()
        guard let transaction = self[keyPath: source].popLast() else { return }
        if let reverted = await writes.performOutside({ store in try store.revert(transaction, author: author) }), let reverted {
            self[keyPath: target].append(reverted)
        } else {
            self[keyPath: source].append(transaction)
        }
        seen = try? store.currentToken
        updateUndoState()
    }

    /// Picks up this editor's edits committed since the last look; a new
    /// edit makes what was undone no longer redoable.
    private func collectEdits() {
        guard let seen, let new = try? store.changes(since: seen) else { return }
        let edits = new.filter { $0.author == author }
        if !edits.isEmpty { redoStack.removeAll() }
        undoStack += edits
        self.seen = new.last?.token ?? seen
    }

    private func updateUndoState() {
        canUndo = !undoStack.isEmpty
        canRedo = !redoStack.isEmpty
    }

    /// Refreshes `canUndo` after this editor's writes (call after edits when showing undo buttons).
    public func refreshUndoState() async {
        await writes.idle()
        collectEdits()
        updateUndoState()
    }

    /// Waits until the writes this model has asked for so far (field edits
    /// included) are done.
    public func waitForWrites() async {
        await writes.idle()
    }
}
