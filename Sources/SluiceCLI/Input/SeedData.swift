import Sluice

/// Rows read from a seed file, grouped by table, with where each row came from.
struct SeedData {
    /// One row and its place in the file, for error messages.
    struct Entry {
        /// The row.
        let row: Row
        /// "row 3" (JSON: position in the table's array) or "line 4" (CSV).
        let location: String
    }

    /// Tables in the order they appear (or sorted, where the format has no order).
    var tables: [(name: String, entries: [Entry])] = []
}

/// A problem in an input file, naming the file and the place.
struct InputError: Error, CustomStringConvertible {
    /// The file's path as given.
    let file: String
    /// The place in the file, when known.
    let location: String?
    /// What is wrong.
    let message: String

    /// `file:location: message`.
    var description: String {
        if let location { return "\(file):\(location): \(message)" }
        return "\(file): \(message)"
    }
}
