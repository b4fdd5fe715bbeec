import SwiftSyntax
import SwiftDiagnostics
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

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
            var column = ".column(\(arguments))"
            if property.indexed { column += ".indexed()" }
            if let references = property.references { column += ".references(\(references))" }
            return column
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

/// A marker on a stored property of a `@Table` struct that `@Table` reads
/// (`@Transient`, `@Indexed`, `@References`): its own expansion only checks
/// that it is on a stored property.
public protocol StoredPropertyMarker: PeerMacro {
    /// The marker as written, for the diagnostic.
    static var marker: String { get }
}

extension StoredPropertyMarker {
    /// Checks the marker: a stored property.
    ///
    /// - Parameters:
    ///   - node: the attribute.
    ///   - declaration: the declaration it is attached to.
    ///   - context: where diagnostics go.
    /// - Returns: no peers (`@Table` reads the marker).
    /// - Throws: never; a problem is a diagnostic.
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        if !(declaration.as(VariableDeclSyntax.self)?.isStored ?? false) {
            context.diagnose(Diagnostic(node: node, message: TableDiagnostic.markerOnNonStored(marker: marker)))
        }
        return []
    }
}

/// `@Indexed` on a stored property of a `@Table` struct: its column gets an index.
public struct IndexedMacro: StoredPropertyMarker {
    /// `@Indexed`.
    public static let marker = "@Indexed"
}

/// `@References(Model.self, onDelete:)` on a stored property of a `@Table`
/// struct: its column refers to that model's primary key.
public struct ReferencesMacro: StoredPropertyMarker {
    /// `@References`.
    public static let marker = "@References"
}
