import SluiceNaming
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

enum TableDiagnostic: DiagnosticMessage {
    case notAStruct(kind: String)
    case missingType(name: String)
    case transientNeedsDefault(name: String)
    case noStoredProperties(type: String)
    case noID(type: String)
    case tableNameNotALiteral
    case columnNameNotALiteral
    case markerOnNonStored(marker: String)

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

    var diagnosticID: MessageID { MessageID(domain: "SluiceMacros", id: "\(self)".prefix { $0 != "(" }.description) }
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

    func attribute(_ name: String) -> AttributeSyntax? {
        attributes.lazy.compactMap { $0.as(AttributeSyntax.self) }.first { $0.attributeName.trimmedDescription == name }
    }

    func hasAttribute(_ name: String) -> Bool { attribute(name) != nil }
}

extension TypeSyntax {
    var isOptional: Bool {
        self.is(OptionalTypeSyntax.self) || self.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
            || trimmedDescription.hasPrefix("Optional<")
    }
}

extension DeclGroupSyntax {
    var kindName: String {
        if self.is(ClassDeclSyntax.self) { return "a class" }
        if self.is(EnumDeclSyntax.self) { return "an enum" }
        if self.is(ActorDeclSyntax.self) { return "an actor" }
        if self.is(ProtocolDeclSyntax.self) { return "a protocol" }
        if self.is(ExtensionDeclSyntax.self) { return "an extension" }
        return "this declaration"
    }
}
