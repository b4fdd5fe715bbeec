import SwiftSyntax
import SwiftSyntaxBuilder

/// `@Table`'s column declarations: each stored property's column with its
/// type, and its initial value as the column's DEFAULT when it is a constant.
extension ModelDescription {
    /// `static var columnDeclarations`, unless the struct declares it.
    func columnDeclarations() -> DeclSyntax? {
        guard !declared.contains("static columnDeclarations") else { return nil }
        let columns = properties.map { property in
            var arguments = "\(Self.quoted(property.name)), \(Self.quoted(property.column)), \(property.type.trimmedDescription).self"
            if let value = property.defaultValue { arguments += ", default: \(value)" }
            if property.name == "id" { arguments += ", primaryKey: true" }
            return ".column(\(arguments))"
        }
        return """
        /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
        \(raw: access)static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
        [
        \(raw: columns.joined(separator: ",\n"))
        ]
        }
        """
    }

    /// The source of a constant expression (a literal without interpolation,
    /// a negative number, an enum case as `.name`, an array of those); nil for anything else
    /// (`Date()` is not a column default: it would be the migration's time).
    static func constant(_ expression: ExprSyntax) -> String? {
        if expression.is(BooleanLiteralExprSyntax.self) || expression.is(IntegerLiteralExprSyntax.self)
            || expression.is(FloatLiteralExprSyntax.self) {
            return expression.trimmedDescription
        }
        if literalText(expression) != nil { return expression.trimmedDescription }
        if let prefix = expression.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-",
           prefix.expression.is(IntegerLiteralExprSyntax.self) || prefix.expression.is(FloatLiteralExprSyntax.self) {
            return expression.trimmedDescription
        }
        if let member = expression.as(MemberAccessExprSyntax.self), member.base == nil { return expression.trimmedDescription }
        // An array of constants (`[]`, `["a"]`): JSON text.
        if let array = expression.as(ArrayExprSyntax.self), array.elements.allSatisfy({ constant($0.expression) != nil }) {
            return expression.trimmedDescription
        }
        return nil
    }
}
