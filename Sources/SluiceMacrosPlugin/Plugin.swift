import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides Sluice's macros.
@main
struct SluiceMacrosPlugin: CompilerPlugin {
    /// `@Table`, `@ColumnName`, `@Transient`, `@Indexed` and `@References`.
    let providingMacros: [any Macro.Type] = [TableMacro.self, ColumnNameMacro.self, TransientMacro.self, IndexedMacro.self, ReferencesMacro.self]
}
