import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides Sluice's macros.
///
/// The compiler finds a macro by its module and type name (`#externalMacro(module:
/// "SluiceMacrosPlugin", type: "TableMacro")`), so the types it names are declared here; each
/// forwards to its implementation in `SluiceMacrosImplementation` (see `Forwarding.swift`).
@main
struct SluiceMacrosPlugin: CompilerPlugin {
    /// `@Table`, `@ColumnName`, `@Transient`, `@Indexed` and `@References`.
    let providingMacros: [any Macro.Type] = [TableMacro.self, ColumnNameMacro.self, TransientMacro.self, IndexedMacro.self, ReferencesMacro.self]
}
