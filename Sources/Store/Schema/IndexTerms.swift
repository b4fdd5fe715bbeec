import Foundation

/// The key terms of a `CREATE INDEX` statement, as written: what an index
/// on expressions compares (`PRAGMA index_xinfo` names only columns).
enum IndexTerms {
    /// The terms between the parentheses after `ON table`, without their
    /// `ASC`/`DESC`; nil when the SQL is not a `CREATE INDEX` that can be
    /// read this way.
    ///
    /// `CREATE UNIQUE INDEX i ON t(lower(name) COLLATE NOCASE DESC, id)`
    /// gives `["lower(name) COLLATE NOCASE", "id"]`.
    static func split(createIndexSQL sql: String) -> [String]? {
        let characters = Array(sql)
        var index = 0
        var depth = 0
        var start: Int?
        var terms: [String] = []
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "'", "\"", "`":
                // A quoted string or identifier; a doubled quote is part of it.
                index += 1
                while index < characters.count {
                    if characters[index] == character {
                        if index + 1 < characters.count, characters[index + 1] == character { index += 2; continue }
                        break
                    }
                    index += 1
                }
            case "[":
                while index < characters.count, characters[index] != "]" { index += 1 }
            case "(":
                depth += 1
                if depth == 1, start == nil { start = index + 1 }
            case ")":
                depth -= 1
                if depth == 0, let from = start {
                    terms.append(String(characters[from..<index]))
                    let trimmed = terms.map(trimOrder)
                    return trimmed.contains("") ? nil : trimmed
                }
                guard depth > 0 else { return nil }
            case "," where depth == 1:
                if let from = start { terms.append(String(characters[from..<index])) }
                start = index + 1
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// A term without surrounding space and a trailing `ASC` or `DESC`.
    private static func trimOrder(_ term: String) -> String {
        var text = term.trimmingCharacters(in: .whitespacesAndNewlines)
        for suffix in ["ASC", "DESC"] where text.uppercased().hasSuffix(suffix) {
            let before = text.dropLast(suffix.count)
            // Only a whole word: "x DESC", not a column named "xdesc".
            if let last = before.last, last.isWhitespace || last == ")" || last == "\"" || last == "]" || last == "`" {
                text = before.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            break
        }
        return text
    }
}
