import Foundation
import OpenCombineShim
import SluiceViewModels
import Sluice

/// The other side of a chat: given what was sent, the reply (if any) and
/// when it comes. Injected so tests control time.
public protocol ChatSession: Sendable {
    /// Waits as the other side would, then returns its reply, or nil for none.
    func reply(to text: String) async throws -> (sender: String, text: String)?
}

/// A simulated friend who answers after a delay on a clock (a test clock in tests).
public struct SimulatedSession<C: Clock>: ChatSession where C.Duration == Duration {
    /// Who replies.
    public let friend: String
    /// How long the reply takes.
    public let delay: Duration
    /// The clock the delay runs on.
    public let clock: C

    /// A friend who replies after `delay` on `clock`.
    ///
    /// - Parameters:
    ///   - friend: the friend's name, the replies' sender.
    ///   - delay: how long a reply takes.
    ///   - clock: the clock the delay is measured on (a test's own clock makes it instant).
    public init(friend: String, delay: Duration = .seconds(2), clock: C) {
        self.friend = friend
        self.delay = delay
        self.clock = clock
    }

    /// Echoes the message with a friendly remark, after the delay.
    ///
    /// - Parameter text: the message sent.
    /// - Returns: the reply's sender and text, or nil for no reply.
    /// - Throws: `CancellationError` when the task is cancelled during the delay.
    public func reply(to text: String) async throws -> (sender: String, text: String)? {
        try await clock.sleep(for: delay)
        return (friend, "You said: \(text)")
    }
}

extension SimulatedSession: Sendable where C: Sendable {}

/// One conversation's messages in sent order, sending, and the other side's replies.
///
/// The history may hold millions of messages: `messages` follows a window of
/// the newest `pageSize` (a message sent or received enters at its end and
/// the oldest held leaves), `loadOlder()` brings the page before it, and
/// `totalCount` counts them all. The view model holds the window's messages
/// only.
@MainActor
public final class ConversationViewModel: ObservableObject {
    /// One message of the history.
    public struct MessageItem: ViewModelItem, Identifiable, Equatable, Sendable {
        /// The message's id.
        public let id: Int64
        /// Who sent it.
        public let sender: String
        /// What it says.
        public let text: String
        /// Whether the local user sent it.
        public let isMine: Bool
        /// Makes an item.
        ///
        /// - Parameter message: the message.
        public init(_ message: Message) {
            id = message.id ?? 0
            sender = message.sender
            text = message.text
            isMine = message.sender == ConversationViewModel.localSender
        }
    }

    /// The sender name of the local user's messages.
    public nonisolated static let localSender = "me"

    /// The newest messages, live: a window of the conversation (see `loadOlder()`).
    public let messages: ObservableArray<MessageItem>
    /// The last error from a write.
    @Published public private(set) var lastError: StoreError?

    /// How many messages a page holds: the window's first size, and what `loadOlder()` adds.
    public let pageSize: Int
    private let writes: WriteQueue
    private let conversationID: Int64
    private let session: (any ChatSession)?
    private var replies: [Task<Void, Never>] = []
    private var cancellables = Set<AnyCancellable>()

    /// A conversation's history; `session` answers sent messages.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - conversationID: the conversation to show.
    ///   - session: who answers sent messages; nobody when nil.
    ///   - pageSize: how many of the newest messages to hold at first, and how many `loadOlder()` adds.
    public init(store: Store, conversationID: Int64, session: (any ChatSession)? = nil, pageSize: Int = 50) {
        writes = WriteQueue(store: store)
        self.conversationID = conversationID
        self.session = session
        self.pageSize = pageSize
        messages = ObservableArray(store.objects(Message.self)
            .filter(Column("conversation_id") == conversationID)
            .sorted(by: \.sentAt, \.id)
            .window(.last(pageSize)))
        messages.itemsPublisher.sink { [weak self] _ in self?.objectWillChange.send() }.store(in: &cancellables)
        writes.failed = { [weak self] error in self?.lastError = error }
    }

    /// Every message of the conversation (nil until counted), for "12,345 messages".
    public var totalCount: Int? { messages.window?.totalCount }

    /// Whether older messages than those held exist (nil until counted).
    public var hasOlder: Bool? { messages.hasMoreAtStart }

    /// Brings the page of messages before the oldest held into `messages`
    /// (the list scrolled to its top); they arrive as insertions at index 0.
    public func loadOlder() {
        messages.loadMore(at: .start, count: pageSize)
    }

    deinit {
        for reply in replies { reply.cancel() }
    }

    /// Stores a message from the local user (returning when it is stored),
    /// then lets the session reply.
    ///
    /// - Parameter text: the message to send.
    public func send(_ text: String) async {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return }
        // The reply task cannot run before this method suspends, and the
        // local message's write is queued before that: it is stored first.
        if let session {
            replies.append(Task { [weak self] in
                guard let reply = try? await session.reply(to: trimmed), !Task.isCancelled else { return }
                await self?.append(sender: reply.sender, text: reply.text)
            })
        }
        await append(sender: Self.localSender, text: trimmed)
    }

    private func append(sender: String, text: String) async {
        let conversationID = conversationID
        await writes.perform { tx in
            try tx.insert(Message(conversationID: conversationID, sender: sender, text: text, sentAt: Date()))
        }
    }
}
