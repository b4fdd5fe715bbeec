import SluiceNaming
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Table` on a struct: makes it a `Store.Model` with a table name, column
/// names (snake_case unless `@ColumnName` says otherwise), `CodingKeys`
/// that agree with them, a column-by-column row reader (`init(row:)`) and
/// writer (`write(to:)`), and the key path ↔ column map of the typed API.
public struct TableMacro: MemberMacro, ExtensionMacro {
    /// The members that belong in the struct itself: its `CodingKeys`, and a
    /// public model's public memberwise initializer.
    ///
    /// - Parameters:
    ///   - node: the `@Table` attribute (its optional table name).
    ///   - declaration: the declaration it is attached to; only a struct is accepted.
    ///   - protocols: the conformances the compiler asks for.
    ///   - context: where diagnostics go.
    /// - Returns: the members; none after a diagnostic.
    /// - Throws: never for bad input: a problem is a diagnostic at its place.
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: TableDiagnostic.notAStruct(kind: declaration.kindName)))
            return []
        }
        guard let model = ModelDescription(structDecl, attribute: node, context: context) else { return [] }
        return model.memberwiseInitializer() + model.codingKeys()
    }

    /// The extension that makes the struct a model: the table name, the column
    /// names, `init(row:)`, `write(to:)` and the key path ↔ column map.
    ///
    /// - Parameters:
    ///   - node: the `@Table` attribute.
    ///   - declaration: the struct.
    ///   - type: the struct's type, as written.
    ///   - protocols: the conformances the compiler asks for.
    ///   - context: where diagnostics go (the member expansion reports them).
    /// - Returns: the extension; none for a declaration that is not a struct.
    /// - Throws: an error of SwiftSyntax's parser if the generated source did not parse.
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        // Only for structs (the member expansion reports anything else, and
        // diagnoses once). The members go in the extension: an initializer
        // in the struct itself would take away its memberwise initializer
        // (a public model's own public one is the exception, made there).
        guard let structDecl = declaration.as(StructDeclSyntax.self),
              let model = ModelDescription(structDecl, attribute: node, context: nil) else { return [] }
        let conformance = protocols.isEmpty ? "" : ": SluiceMacros._SluiceModel"
        let members = model.members().map { "\($0)" }.joined(separator: "\n\n")
        return [try ExtensionDeclSyntax("extension \(type.trimmed)\(raw: conformance) {\n\(raw: members)\n}")]
    }
}

/// `@ColumnName("name")` on a stored property of a `@Table` struct: its column's name.
public struct ColumnNameMacro: PeerMacro {
    /// Checks the marker: a stored property and a string literal.
    ///
    /// - Parameters:
    ///   - node: the `@ColumnName` attribute.
    ///   - declaration: the declaration it is attached to.
    ///   - context: where diagnostics go.
    /// - Returns: no peers (the name is read by `@Table`).
    /// - Throws: never; a problem is a diagnostic.
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        if let variable = declaration.as(VariableDeclSyntax.self), variable.isStored {
            if ModelDescription.stringArgument(of: node) == nil {
                context.diagnose(Diagnostic(node: node, message: TableDiagnostic.columnNameNotALiteral))
            }
        } else {
            context.diagnose(Diagnostic(node: node, message: TableDiagnostic.markerOnNonStored(marker: "@ColumnName")))
        }
        return []
    }
}

/// `@Transient` on a stored property of a `@Table` struct: not a column.
public struct TransientMacro: StoredPropertyMarker {
    /// `@Transient`.
    public static let marker = "@Transient"
}

/// What `@Table` read off a struct.
struct ModelDescription {
    /// A stored property that is a column.
    struct Property {
        /// The property's name.
        let name: String
        /// Its column's name.
        let column: String
        /// Its type, as written.
        let type: TypeSyntax
        /// Its initial value's source when it is a constant (a literal, an enum case), for the column's DEFAULT.
        let defaultValue: String?
        /// Whether it is marked `@Indexed`.
        var indexed = false
        /// The arguments of its `@References(...)`, as written.
        var references: String?
    }

    /// A parameter of the memberwise initializer, as Swift's implicit one has it.
    struct Parameter {
        /// The parameter's name.
        let name: String
        /// Its type.
        let type: TypeSyntax
        /// Its default value's source, if any.
        let defaultValue: String?
    }

    /// The struct's name.
    let typeName: String
    /// The struct's access level (`public `, or empty), for the members made.
    let access: String
    /// The table's name: `@Table("name")`'s, or the struct's name in snake_case.
    let tableName: String
    /// The stored properties that are columns, in order.
    let properties: [Property]
    /// The members the struct declares itself (the macro leaves those out).
    let declared: Set<String>
    /// Whether the struct declares its own `CodingKeys`.
    let hasCodingKeys: Bool
    /// The memberwise initializer's parameters; nil when one property's type is not written
    /// out (Swift infers it; the macro cannot).
    let memberwise: [Parameter]?

    /// Reads the struct; reports what it cannot map through `context` (nil: silently).
    init?(_ decl: StructDeclSyntax, attribute: AttributeSyntax, context: (any MacroExpansionContext)?) {
        typeName = decl.name.text
        let modifiers = decl.modifiers.map(\.name.text)
        access = modifiers.first { ["public", "package"].contains($0) }.map { $0 + " " } ?? ""
        if let arguments = attribute.arguments?.as(LabeledExprListSyntax.self), !arguments.isEmpty {
            guard let name = Self.stringArgument(of: attribute) else {
                context?.diagnose(Diagnostic(node: attribute, message: TableDiagnostic.tableNameNotALiteral))
                return nil
            }
            tableName = name
        } else {
            tableName = ColumnNaming.snakeCase(decl.name.text)
        }
        var properties: [Property] = []
        var declared = Set<String>()
        var memberwise: [Parameter]? = []
        var valid = true
        // The struct's own CodingKeys, if any, name the columns (as for Codable).
        let codingKeys = Self.codingKeys(of: decl)
        for member in decl.memberBlock.members {
            if let function = member.decl.as(FunctionDeclSyntax.self) {
                declared.insert(function.name.text + "(" + function.signature.parameterClause.parameters.map { $0.firstName.text + ":" }.joined() + ")")
            }
            if let initializer = member.decl.as(InitializerDeclSyntax.self) {
                declared.insert("init(" + initializer.signature.parameterClause.parameters.map { $0.firstName.text + ":" }.joined() + ")")
            }
            if let alias = member.decl.as(TypeAliasDeclSyntax.self) { declared.insert("type " + alias.name.text) }
            if let nested = member.decl.asProtocol(NamedDeclSyntax.self), !member.decl.is(VariableDeclSyntax.self), !member.decl.is(FunctionDeclSyntax.self) {
                declared.insert("type " + nested.name.text)
            }
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            let isStatic = variable.modifiers.contains { ["static", "class"].contains($0.name.text) }
            for binding in variable.bindings {
                guard let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text else { continue }
                if isStatic {
                    declared.insert("static " + name)
                    continue
                }
                guard variable.isStored else { continue }
                let transient = variable.hasAttribute("Transient")
                // `let x = 1` cannot be read from a row: it is not a column.
                let constantWithValue = variable.bindingSpecifier.text == "let" && binding.initializer != nil
                if !constantWithValue {
                    // As Swift's implicit memberwise initializer: a `var`'s initial value, or
                    // nil for an optional `var`, is the parameter's default.
                    if let type = binding.typeAnnotation?.type ?? (binding.initializer == nil ? variable.bindings.last?.typeAnnotation?.type : nil) {
                        let isVar = variable.bindingSpecifier.text == "var"
                        let defaultValue = binding.initializer.map { $0.value.trimmedDescription } ?? (isVar && type.isOptional ? "nil" : nil)
                        memberwise?.append(Parameter(name: name, type: type.trimmed, defaultValue: isVar ? defaultValue : nil))
                    } else {
                        memberwise = nil
                    }
                }
                if transient || constantWithValue {
                    if transient, binding.initializer == nil, binding.typeAnnotation?.type.isOptional != true {
                        context?.diagnose(Diagnostic(node: binding, message: TableDiagnostic.transientNeedsDefault(name: name)))
                        valid = false
                    }
                    continue
                }
                // `var a, b: Int` annotates the last binding only.
                guard let type = binding.typeAnnotation?.type ?? variable.bindings.last?.typeAnnotation?.type else {
                    context?.diagnose(Diagnostic(node: binding, message: TableDiagnostic.missingType(name: name)))
                    valid = false
                    continue
                }
                let column: String
                if let codingKeys {
                    guard let key = codingKeys[name] else { continue }   // Codable skips it: not a column
                    column = key
                } else {
                    column = variable.attribute("ColumnName").flatMap(Self.stringArgument) ?? ColumnNaming.snakeCase(name)
                }
                var property = Property(name: name, column: column, type: type.trimmed,
                                        defaultValue: binding.initializer.flatMap { Self.constant($0.value) })
                property.indexed = variable.hasAttribute("Indexed")
                property.references = variable.attribute("References")?.arguments?.trimmedDescription
                properties.append(property)
            }
        }
        guard valid else { return nil }
        guard !properties.isEmpty else {
            context?.diagnose(Diagnostic(node: decl.name, message: TableDiagnostic.noStoredProperties(type: typeName)))
            return nil
        }
        guard properties.contains(where: { $0.name == "id" }) else {
            context?.diagnose(Diagnostic(node: decl.name, message: TableDiagnostic.noID(type: typeName)))
            return nil
        }
        self.properties = properties
        self.declared = declared
        self.hasCodingKeys = codingKeys != nil
        self.memberwise = memberwise
    }

    /// The cases of a `CodingKeys` enum nested in the struct, each with its
    /// raw value (its name when it has none); nil when there is no such enum.
    static func codingKeys(of decl: StructDeclSyntax) -> [String: String]? {
        guard let keys = decl.memberBlock.members.lazy.compactMap({ $0.decl.as(EnumDeclSyntax.self) })
            .first(where: { $0.name.text == "CodingKeys" }) else { return nil }
        var columns: [String: String] = [:]
        for member in keys.memberBlock.members {
            guard let caseDecl = member.decl.as(EnumCaseDeclSyntax.self) else { continue }
            for element in caseDecl.elements {
                let name = element.name.text
                columns[name] = element.rawValue.flatMap { literalText($0.value) } ?? name
            }
        }
        return columns
    }

    /// The name of the local that holds a property's value in `init(row:)`.
    static func local(_ name: String) -> String {
        "_sluice_" + name.filter { $0 != "`" }
    }

    /// The extension's members: the table name, column names, `init(row:)`,
    /// `write(to:)` and the key path map, each unless the struct declares it.
    func members() -> [DeclSyntax] {
        var members: [DeclSyntax] = []
        if !declared.contains("static tableName") {
            members.append("/// The table the model lives in.\n\(raw: access)static let tableName = \(literal: tableName)")
        }
        if let id = properties.first(where: { $0.name == "id" }), id.column != "id", !declared.contains("static primaryKeyColumn") {
            members.append("/// The primary key's column.\n\(raw: access)static var primaryKeyColumn: String { \(literal: id.column) }")
        }
        if !declared.contains("init(row:)") {
            // Every read (each may throw) before any assignment: with no
            // partly initialized self on the error paths, the optimizer
            // builds the value in place (the fetch benchmark measured a copy
            // and a destroy of the whole model per row otherwise).
            let reads = properties.map { "let \(Self.local($0.name)): \($0.type.trimmedDescription) = try row[\(Self.quoted($0.column))]" }
            let assignments = properties.map { "self.\($0.name) = \(Self.local($0.name))" }
            members.append("""
            /// Reads the model from a row, column by column.
            \(raw: access)init(row: SluiceMacros._SluiceRowReader) throws {
            \(raw: (reads + assignments).joined(separator: "\n"))
            }
            """)
        }
        if !declared.contains("write(to:)") {
            let writes = properties.map { "try row.write(self.\($0.name), as: \(Self.quoted($0.column)))" }
            members.append("""
            /// Writes the model's columns.
            \(raw: access)func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
            \(raw: writes.joined(separator: "\n"))
            }
            """)
        }
        if !declared.contains("columnName(for:)") {
            let checks = properties.map { "if keyPath == \\\(typeName).\($0.name) { return \(Self.quoted($0.column)) }" }
            members.append("""
            /// The column of a stored property's key path.
            \(raw: access)static func columnName(for keyPath: PartialKeyPath<\(raw: typeName)>) -> String? {
            \(raw: checks.joined(separator: "\n"))
            return nil
            }
            """)
        }
        if let columns = columnDeclarations() { members.append(columns) }
        if !declared.contains("type ID"), let id = properties.first(where: { $0.name == "id" }) {
            // Spelled out: the type Swift infers for the conformance made in this extension
            // could not be named in the model's own module ("'ID' is inaccessible due to
            // '@_spi' protection level", Swift 6.3), e.g. `Person.ID` in a view model.
            members.append("/// The primary key's type (`Identifiable`'s `ID`).\n\(raw: access)typealias ID = \(id.type)")
        }
        if !declared.contains("didInsert(rowID:)"), let id = properties.first(where: { $0.name == "id" }) {
            switch id.type.trimmedDescription.filter({ $0 != " " }) {
            case "Int64?", "Optional<Int64>":
                members.append("/// Takes the id SQLite assigned.\n\(raw: access)mutating func didInsert(rowID: Int64) { self.id = rowID }")
            case "Int?", "Optional<Int>":
                members.append("/// Takes the id SQLite assigned.\n\(raw: access)mutating func didInsert(rowID: Int64) { self.id = Int(rowID) }")
            default:
                break
            }
        }
        return members
    }

    /// A public (or package) model's memberwise initializer, with the model's access: Swift
    /// gives the implicit one internal access at most, so an app's public model used from
    /// another module had no initializer there but init(row:) and init(from:). In the struct
    /// itself, where it takes the implicit one's place (the same parameters and defaults).
    /// None when the struct declares an initializer of its own, or a property's type is not
    /// written out.
    func memberwiseInitializer() -> [DeclSyntax] {
        guard !access.isEmpty, let memberwise, !memberwise.isEmpty,
              !declared.contains(where: { $0.hasPrefix("init(") && !["init(row:)", "init(from:)"].contains($0) }) else { return [] }
        let parameters = memberwise.map { parameter in
            "\(parameter.name): \(parameter.type.trimmedDescription)" + (parameter.defaultValue.map { " = \($0)" } ?? "")
        }
        let assignments = memberwise.map { "self.\($0.name) = \($0.name)" }
        return ["""
            /// Makes a model from each stored property's value, as Swift's memberwise initializer.
            \(raw: access)init(\(raw: parameters.joined(separator: ", "))) {
            \(raw: assignments.joined(separator: "\n"))
            }
            """]
    }

    /// `CodingKeys` with the column names, unless the struct has its own
    /// (a member: `Codable` synthesis looks for it in the type).
    func codingKeys() -> [DeclSyntax] {
        var members: [DeclSyntax] = []
        if !hasCodingKeys {
            let cases = properties.map { property in
                property.name == property.column ? "case \(property.name)" : "case \(property.name) = \(Self.quoted(property.column))"
            }
            members.append("""
            /// The columns, as `Codable` names them.
            \(raw: access)enum CodingKeys: String, CodingKey {
            \(raw: cases.joined(separator: "\n"))
            }
            """)
        }
        return members
    }

    /// The string literal argument of an attribute (`@Table("people")`), or nil.
    static func stringArgument(of attribute: AttributeSyntax) -> String? {
        guard let arguments = attribute.arguments?.as(LabeledExprListSyntax.self), arguments.count == 1,
              let argument = arguments.first else { return nil }
        return literalText(argument.expression)
    }

    /// The text of a plain string literal (no interpolation), or nil.
    static func literalText(_ expression: ExprSyntax) -> String? {
        guard let literal = expression.as(StringLiteralExprSyntax.self), literal.segments.count == 1,
              let segment = literal.segments.first?.as(StringSegmentSyntax.self) else { return nil }
        return segment.content.text
    }

    /// A Swift string literal for a name.
    static func quoted(_ text: String) -> String {
        var quoted = "\""
        for character in text {
            if character == "\\" || character == "\"" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "\""
    }
}
