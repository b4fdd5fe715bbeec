import Foundation
import OpenCombineShim
import SluiceViewModels
import Sluice

/// A form whose two entries must match and be at least 5 characters long
/// (the seed article's rules, exactly); submitting stores the value as a
/// person's e-mail address.
@MainActor
public final class ReactiveFormModel: ObservableObject {
    /// "Values for fields must match."
    public static let mismatchMessage = "Values for fields must match."
    /// "Please enter values of at least 5 characters."
    public static let lengthMessage = "Please enter values of at least 5 characters."

    /// The first entry.
    @Published public var firstEntry = "" { didSet { validate() } }
    /// The repeated entry.
    @Published public var secondEntry = "" { didSet { validate() } }
    /// What is wrong with the entries, in the article's order; empty when valid.
    @Published public private(set) var validationMessages: [String] = []
    /// The last error from submitting.
    @Published public private(set) var lastError: StoreError?

    /// Whether the form may be submitted.
    public var submitAllowed: AnyPublisher<Bool, Never> {
        $validationMessages.map(\.isEmpty).removeDuplicates().eraseToAnyPublisher()
    }

    private let writes: WriteQueue
    private let personID: Int64

    /// A form that sets the e-mail of person `personID`.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - personID: the person whose e-mail the form sets.
    public init(store: Store, personID: Int64) {
        writes = WriteQueue(store: store)
        self.personID = personID
        validate()
        writes.failed = { [weak self] error in self?.lastError = error }
    }

    /// The article's rules.
    ///
    /// - Parameters:
    ///   - value: the value typed.
    ///   - repeated: the value typed again.
    /// - Returns: the messages of the rules broken; none when the form is valid.
    public static func messages(_ value: String, _ repeated: String) -> [String] {
        var messages: [String] = []
        if repeated != value { messages.append(mismatchMessage) }
        if value.count < 5 || repeated.count < 5 { messages.append(lengthMessage) }
        return messages
    }

    private func validate() {
        let messages = Self.messages(firstEntry, secondEntry)
        if messages != validationMessages { validationMessages = messages }
    }

    /// Stores the value as the person's e-mail; false when the form is not
    /// valid or the write failed (`lastError` says why).
    ///
    /// - Returns: whether the e-mail was stored.
    @discardableResult
    public func submit() async -> Bool {
        guard validationMessages.isEmpty else { return false }
        let value = firstEntry, id = personID
        return await writes.perform { tx in try tx.update(Person.self, id: id) { $0.email = value } } != nil
    }
}
