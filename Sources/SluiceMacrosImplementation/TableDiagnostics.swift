import SluiceNaming
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// What `@Table` and its markers report at the place of a problem, as compiler errors.
enum TableDiagnostic: DiagnosticMessage {
    /// `@Table` on a class, enum, actor or protocol.
    case notAStruct(kind: String)
    /// A stored property whose type is not written out.
    case missingType(name: String)
    /// A `@Transient` property without a default value.
    case transientNeedsDefault(name: String)
    /// A struct with no stored property.
    case noStoredProperties(type: String)
    /// A struct with no `id` property.
    case noID(type: String)
    /// `@Table(...)` with a name that is not a string literal.
    case tableNameNotALiteral
    /// `@ColumnName(...)` with a name that is not a string literal.
    case columnNameNotALiteral
    /// A marker on something that is not a stored property.
    case markerOnNonStored(marker: String)

    /// The sentence the compiler shows: what is wrong and what to write instead.
    var message: String {
        switch self {
        case .notAStruct(let kind):
            return "@Table applies to a struct, not to \(kind); models are value types"
        case .missingType(let name):
            return "@Table needs the type of '\(name)' written out (for example 'var \(name): Int = 0') to read and write its column"
        case .transientNeedsDefault(let name):
            return "@Transient property '\(name)' needs a default value: it is not read from the row"
        case .noStoredProperties(let type):
            return "@Table struct \(type) has no stored properties to map to columns"
        case .noID(let type):
            return "@Table struct \(type) needs an 'id' property: its primary key (Identifiable's id)"
        case .tableNameNotALiteral:
            return "@Table takes the table's name as a string literal, for example @Table(\"people\")"
        case .columnNameNotALiteral:
            return "@ColumnName takes the column's name as a string literal, for example @ColumnName(\"first_name\")"
        case .markerOnNonStored(let marker):
            return "\(marker) applies to a stored property"
        }
    }

    /// The case's name, under the `SluiceMacros` domain.
    var diagnosticID: MessageID { MessageID(domain: "SluiceMacros", id: "\(self)".prefix { $0 != "(" }.description) }
    /// Always an error: the model would not map its columns.
    var severity: DiagnosticSeverity { .error }
}

extension VariableDeclSyntax {
    /// Whether the variable has storage: no accessors, or only observers.
    var isStored: Bool {
        for binding in bindings {
            guard let accessors = binding.accessorBlock?.accessors else { continue }
            switch accessors {
            case .getter: return false
            case .accessors(let list):
                if list.contains(where: { !["willSet", "didSet"].contains($0.accessorSpecifier.text) }) { return false }
            }
        }
        return true
    }

    /// The attribute of this name on the declaration, if any.
    func attribute(_ name: String) -> AttributeSyntax? {
        attributes.lazy.compactMap { $0.as(AttributeSyntax.self) }.first { $0.attributeName.trimmedDescription == name }
    }

    /// Whether the declaration has an attribute of this name.
    func hasAttribute(_ name: String) -> Bool { attribute(name) != nil }
}

extension TypeSyntax {
    /// Whether the type is written as an optional (`T?`, `T!`, `Optional<T>`).
    var isOptional: Bool {
        self.is(OptionalTypeSyntax.self) || self.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
            || trimmedDescription.hasPrefix("Optional<")
    }
}

extension DeclGroupSyntax {
    /// How a diagnostic names the declaration's kind ("a class").
    var kindName: String {
        if self.is(ClassDeclSyntax.self) { return "a class" }
        if self.is(EnumDeclSyntax.self) { return "an enum" }
        if self.is(ActorDeclSyntax.self) { return "an actor" }
        if self.is(ProtocolDeclSyntax.self) { return "a protocol" }
        if self.is(ExtensionDeclSyntax.self) { return "an extension" }
        return "this declaration"
    }
}
