import SluiceMacrosImplementation
import SwiftSyntax
import SwiftSyntaxMacros

// The macros as the compiler names them, each forwarding to its implementation. The
// implementations live in a library of their own so that the expansion tests depend on a
// library, not on this macro target: a test target that depends on a macro target makes
// SwiftPM build the whole test graph for the host, so the store and every dependency the tests
// share with the executables were compiled a second time.

/// `@Table`: ``SluiceMacrosImplementation/TableMacro``.
public enum TableMacro: MemberMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try SluiceMacrosImplementation.TableMacro.expansion(of: node, providingMembersOf: declaration, conformingTo: protocols, in: context)
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        try SluiceMacrosImplementation.TableMacro.expansion(of: node, attachedTo: declaration, providingExtensionsOf: type,
                                                            conformingTo: protocols, in: context)
    }
}

/// A peer macro that forwards to `Implementation`.
public protocol ForwardingPeerMacro: PeerMacro {
    associatedtype Implementation: PeerMacro
}

extension ForwardingPeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        try Implementation.expansion(of: node, providingPeersOf: declaration, in: context)
    }
}

/// `@ColumnName`.
public enum ColumnNameMacro: ForwardingPeerMacro {
    public typealias Implementation = SluiceMacrosImplementation.ColumnNameMacro
}

/// `@Transient`.
public enum TransientMacro: ForwardingPeerMacro {
    public typealias Implementation = SluiceMacrosImplementation.TransientMacro
}

/// `@Indexed`.
public enum IndexedMacro: ForwardingPeerMacro {
    public typealias Implementation = SluiceMacrosImplementation.IndexedMacro
}

/// `@References`.
public enum ReferencesMacro: ForwardingPeerMacro {
    public typealias Implementation = SluiceMacrosImplementation.ReferencesMacro
}
