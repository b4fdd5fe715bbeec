/// How Swift property names find columns: exactly, then ignoring ASCII case
/// (as SQLite does), then as snake_case (`projectID` → `project_id`,
/// `firstName` → `first_name`), so a model's Swift names work in query
/// strings, sort keys and `keyPaths:`, and a `Codable` model needs no
/// `CodingKeys` just to map camelCase to a snake_case schema.
///
/// Its own module so that the store (finding columns) and the `@Table` macro
/// (naming them) use one rule: a model's columns and its Swift names always agree.
public enum ColumnNaming {
    /// `firstName` → `first_name`, `projectID` → `project_id`,
    /// `userURLString` → `user_url_string`; names without capitals unchanged.
    public static func snakeCase(_ name: String) -> String {
        let characters = Array(name)
        guard characters.contains(where: \.isUppercase) else { return name }
        var result = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                // A word starts: after a lowercase letter or digit, or where an acronym ends (URLString: the S).
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                    if previous != "_" { result.append("_") }
                }
            }
            result.append(contentsOf: character.lowercased())
        }
        return result
    }
}
