import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct SluiceMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [TableMacro.self, ColumnNameMacro.self, TransientMacro.self]
}
