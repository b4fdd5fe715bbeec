/// Full-text queries made from what a user typed, safe whatever the text:
/// FTS5's query syntax (quotes, `AND`, `*`, `:`, parentheses) never leaks
/// from a search field into the query.
public enum FullTextQuery {
    /// A query that matches the rows holding every word of `text` as the
    /// start of a word (`zo osl` finds "Zoë … Oslo"): a search field's
    /// query, as the user types.
    ///
    /// Words are split as FTS5's `unicode61` tokenizer splits them: runs of
    /// letters and digits; everything else (punctuation, spaces, emoji) only
    /// separates them.
    ///
    /// ```swift
    /// if let query = FullTextQuery.prefixes(of: searchField.text) {
    ///     results = store.objects(Person.self).searching(query)
    /// }
    /// ```
    ///
    /// - Parameter text: the text typed.
    /// - Returns: the query (`"zo"* "osl"*`), or nil when the text has no word.
    /// - Complexity: O(n) in the text's length.
    public static func prefixes(of text: String) -> String? {
        let words = words(of: text)
        guard !words.isEmpty else { return nil }
        return words.map { "\"\($0)\"*" }.joined(separator: " ")
    }

    /// The words of a text: its runs of letters and digits.
    static func words(of text: String) -> [Substring] {
        text.split { !($0.isLetter || $0.isNumber) }
    }
}
