import Foundation
import Sluice

/// Generates realistic demo data: people with varied (also non-ASCII) names
/// and addresses, packages with contents, and chat conversations.
///
/// Deterministic for a given seed, so tests and tours are repeatable.
public struct DemoData {
    /// How much to generate.
    public struct Size: Sendable {
        /// Number of people.
        public var people: Int
        /// Packages per person (0.5 = one package for every two people).
        public var packagesPerPerson: Double = 0.5
        /// Number of conversations (defaults to one per 100 people, 3 to 50).
        public var conversations: Int?
        /// Messages of one long history, added to conversation 1 before its
        /// others (a chat of a million messages, for windows of it).
        public var history = 0

        /// A size with `people` people.
        ///
        /// - Parameter people: how many people.
        public init(people: Int) { self.people = people }
    }

    /// What was inserted.
    public struct Counts: Sendable, Equatable {
        /// Rows inserted per table.
        public var people = 0, packages = 0, contents = 0, messages = 0
    }

    static let firstNames = [
        "Zoë", "José", "Anna", "Łukasz", "Søren", "Ngọc", "Émile", "Björk", "Hana", "Oliver", "Amélie", "Jürgen",
        "Mia", "Noah", "Chloé", "Mateo", "Aiko", "Yusuf", "Inès", "Olga", "Siobhán", "Kofi", "Priya", "Ana",
        "Sven", "Dagný", "Tomás", "Léa", "Elif", "Ravi", "Mei", "Ayşe", "João", "Fatima", "Lars", "Zoltán",
        "Nikolaj", "Renée", "Ólafur", "Şebnem", "李", "Владимир", "Αθηνά", "Chidi", "Wiremu", "Tiago", "Ines",
    ]
    static let lastNames = [
        "Müller", "Nguyễn", "Smith", "Öztürk", "García", "Kowalski", "Tanaka", "Ødegaard", "Dubois", "Novák",
        "Rossi", "Johansson", "O'Brien", "Kim", "Silva", "Schäfer", "Fernández", "Jensen", "Lefèvre", "Yılmaz",
        "Hernández", "Nakamura", "Brown", "Łęcki", "Håkansson", "van der Berg", "Mbeki", "Patel", "Wang", "Ivanova",
        "Ó Súilleabháin", "Þórsdóttir", "Andersson", "Costa", "Dvořák", "Kuznetsova", "Okafor", "王", "Παπαδόπουλος",
    ]
    static let places: [(city: String, country: String, postalPrefix: String)] = [
        ("Oslo", "Norway", "0"), ("Berlin", "Germany", "10"), ("München", "Germany", "80"), ("Kraków", "Poland", "30-"),
        ("São Paulo", "Brazil", "01"), ("Zürich", "Switzerland", "80"), ("København", "Denmark", "1"),
        ("Reykjavík", "Iceland", "1"), ("Lyon", "France", "690"), ("Ho Chi Minh City", "Vietnam", "70"),
        ("Tokyo", "Japan", "100-"), ("İstanbul", "Turkey", "34"), ("Dublin", "Ireland", "D0"), ("Praha", "Czechia", "1"),
        ("Auckland", "New Zealand", "10"), ("Lagos", "Nigeria", "10"), ("Mumbai", "India", "400"), ("Seattle", "USA", "98"),
    ]
    static let streets = ["Main Street", "Karl Johans gate", "Hauptstraße", "Rue de la Paix", "Rua Augusta", "Ulica Długa",
                          "Bahnhofstrasse", "Strøget", "Laugavegur", "Station Road", "Calle Mayor", "Nám. Míru"]
    /// Item titles for package contents (also used by `addRandomItem()`).
    public static let itemTitles = ["Books", "Coffee beans", "Tea", "Socks", "Chocolate", "Headphones", "Postcards",
                                    "Scarf", "Board game", "Candles", "Honey", "Vinyl record", "Puzzle", "Gloves"]
    static let lines = ["Hi! How are you?", "Did the package arrive?", "Yes, thanks a lot 😊", "On my way.",
                        "Can we talk tomorrow?", "Sure, after lunch.", "Ça marche !", "Danke schön!", "¿Qué tal?",
                        "The tracking says it's in Oslo.", "Great news.", "I sent the books today.", "👍", "See you soon!"]

    private var random: SplitMix64

    /// Creates a generator with a seed.
    ///
    /// - Parameter seed: the seed: the same seed makes the same data.
    public init(seed: UInt64 = 42) {
        random = SplitMix64(seed: seed)
    }

    /// Inserts demo data in one transaction and returns what it inserted.
    ///
    /// - Parameters:
    ///   - size: how many people (and, in proportion, packages and messages).
    ///   - store: the store to write to.
    ///   - progress: called now and then with a phase name, the number of
    ///     rows done and the total, for a progress bar.
    ///
    /// - Returns: how many rows of each table were inserted.
    /// - Throws: `StoreError` from the write (nothing is inserted then).
    @discardableResult
    public mutating func insert(
        _ size: Size, into store: Store, progress: (String, Int, Int) -> Void = { _, _, _ in }
    ) throws -> Counts {
        try store.write { tx in try insert(size, into: tx, progress: progress) }
    }

    /// Inserts demo data in the current transaction.
    ///
    /// - Parameters:
    ///   - size: how many people (and, in proportion, packages and messages).
    ///   - tx: the transaction to write in.
    ///   - progress: called now and then with a phase name, the rows done and the total.
    /// - Returns: how many rows of each table were inserted.
    /// - Throws: `StoreError` from a write (the caller's transaction then rolls back).
    public mutating func insert(
        _ size: Size, into tx: Database, progress: (String, Int, Int) -> Void = { _, _, _ in }
    ) throws -> Counts {
        var counts = Counts()
        let step = max(1, size.people / 100)
        var personIDs: [Int64] = []
        personIDs.reserveCapacity(size.people)
        for index in 0..<size.people {
            let person = try tx.insert(makePerson())
            if let id = person.id { personIDs.append(id) }
            if index % step == 0 { progress("people", index, size.people) }
        }
        progress("people", size.people, size.people)
        counts.people = size.people

        let packageCount = personIDs.isEmpty ? 0 : Int(Double(size.people) * size.packagesPerPerson)
        let start = Date(timeIntervalSince1970: 1_767_225_600) // 2026-01-01
        for index in 0..<packageCount {
            let recipient = personIDs[next(personIDs.count)]
            let sender = next(10) == 0 ? nil : personIDs[next(personIDs.count)]
            let created = start.addingTimeInterval(Double(index) * 600 + Double(next(600)))
            let package = try tx.insert(Package(recipientID: recipient, senderID: sender, createdAt: created))
            guard let packageID = package.id else { continue }
            for position in 0..<(1 + next(4)) {
                try tx.insert(PackageContent(packageID: packageID, title: pick(Self.itemTitles), weight: 50 + next(2951), position: position))
                counts.contents += 1
            }
            if index % step == 0 { progress("packages", index, packageCount) }
        }
        counts.packages = packageCount
        if packageCount > 0 { progress("packages", packageCount, packageCount) }

        if size.history > 0 {
            // One message every 30 s, up to the conversations' start.
            let first = start.addingTimeInterval(-30 * Double(size.history))
            let historyStep = max(1, size.history / 100)
            for index in 0..<size.history {
                try tx.insert(Message(conversationID: 1, sender: index % 2 == 0 ? "me" : "Ada", text: pick(Self.lines),
                                      sentAt: first.addingTimeInterval(30 * Double(index))))
                if index % historyStep == 0 { progress("messages", index, size.history) }
            }
            progress("messages", size.history, size.history)
            counts.messages += size.history
        }
        let conversations = size.conversations ?? min(50, max(3, size.people / 100))
        for conversation in 1...max(1, conversations) where size.people > 0 {
            let friend = pick(Self.firstNames)
            var sent = start.addingTimeInterval(Double(conversation) * 86_400)
            for index in 0..<(10 + next(21)) {
                sent = sent.addingTimeInterval(Double(30 + next(3600)))
                try tx.insert(Message(conversationID: Int64(conversation), sender: index % 2 == 0 ? "me" : friend,
                                      text: pick(Self.lines), sentAt: sent))
                counts.messages += 1
            }
        }
        return counts
    }

    /// A random person.
    ///
    /// - Returns: the person, not stored.
    public mutating func makePerson() -> Person {
        let first = pick(Self.firstNames)
        let last = pick(Self.lastNames)
        let place = pick(Self.places)
        let local = Self.asciiHandle(first) + "." + Self.asciiHandle(last)
        return Person(
            firstName: first, lastName: last,
            age: next(20) == 0 ? nil : 18 + next(70),
            email: next(10) == 0 ? nil : "\(local)\(next(100))@example.com",
            street: "\(1 + next(200)) \(pick(Self.streets))",
            city: place.city,
            postalCode: place.postalPrefix + String(100 + next(900)),
            country: place.country)
    }

    /// A lower-case ASCII form of a name for e-mail addresses ("Łukasz" → "lukasz").
    static func asciiHandle(_ name: String) -> String {
        // Letters that are not a base letter plus a diacritic do not fold.
        let special: [Character: String] = ["ø": "o", "Ø": "o", "ł": "l", "Ł": "l", "æ": "ae", "Æ": "ae", "ß": "ss",
                                            "þ": "th", "Þ": "th", "đ": "d", "Đ": "d", "ı": "i"]
        let mapped = name.map { special[$0] ?? String($0) }.joined()
        let folded = mapped.folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil)
        let handle = folded.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || $0 == "-") }
        let text = String(String.UnicodeScalarView(handle)).lowercased()
        return text.isEmpty ? "user" : text
    }

    private mutating func next(_ bound: Int) -> Int {
        Int(random.next() % UInt64(max(bound, 1)))
    }

    private mutating func pick<T>(_ items: [T]) -> T {
        items[next(items.count)]
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64):
/// the same seed gives the same demo data (and the same test workloads).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// A generator that starts from `seed`.
    ///
    /// - Parameter seed: the first state.
    public init(seed: UInt64) { state = seed }
    /// The next 64 random bits.
    ///
    /// - Returns: the bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
