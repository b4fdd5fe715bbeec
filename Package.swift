// swift-tools-version:6.0

import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Sluice",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        // The store: `import Sluice`.
        .library(name: "Sluice", targets: ["Sluice"]),
        // ObservableArray, ObservableSections, LiveResults: live queries as view-model state.
        .library(name: "SluiceViewModels", targets: ["SluiceViewModels"]),
        // The demo domain and its view models (the CLI's demo, the tests, the guides).
        .library(name: "SluiceDemo", targets: ["SluiceDemo"]),
        // The @Table model macro: its own product, so an app with Codable models does not build swift-syntax.
        .library(name: "SluiceMacros", targets: ["SluiceMacros"]),
        .executable(name: "sluice", targets: ["sluice"]),
        // Sync, the device side: no server dependencies. The service (Hummingbird, PostgreSQL)
        // is the package in Server/, so an app resolves none of its packages.
        .library(name: "SluiceSyncClient", targets: ["SluiceSyncClient"]),
        .library(name: "SluiceSyncProtocol", targets: ["SluiceSyncProtocol"]),
        // What the device client and the service both need of the store (SyncValue ↔ SQLiteValue,
        // a registered schema read from a database): the service links this, not the client.
        .library(name: "SluiceSyncStore", targets: ["SluiceSyncStore"]),
        // How the service decides a push (identity, retries, replays, order), over any storage
        // of the history: the service's PostgreSQL, and a history in memory for tests.
        .library(name: "SluiceSyncPolicy", targets: ["SluiceSyncPolicy"]),
        // Test helpers (temporary databases, the sqlite3 shell, a plain connection), for the
        // service package's tests; not for apps.
        .library(name: "SluiceTestSupport", targets: ["SluiceTestSupport"]),
        // The sync loop's scenarios every service must pass (the real one, the in-memory one),
        // for the tests of both packages; not for apps.
        .library(name: "SluiceSyncConformance", targets: ["SluiceSyncConformance"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/onevcat/Rainbow", from: "4.2.2"),
        // `swift package generate-documentation` for the DocC catalogs (a plugin: nothing of it is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"604.0.0"),
        // SHA-256 for attachments' content addresses (CryptoKit on Apple platforms; the
        // service's JWT package depends on it too).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]
        ),
        // How Swift names become column names: one rule for the store and the macro.
        .target(name: "SluiceNaming"),
        // The module is `Sluice` (its main type is `Store`); the folder keeps its name.
        .target(
            name: "Sluice",
            dependencies: ["CSQLite", "SluiceNaming", .product(name: "OpenCombineShim", package: "OpenCombine")],
            path: "Sources/Store"
        ),
        // The macros' expansions, a library the expansion tests use (see SluiceMacrosPlugin).
        .target(
            name: "SluiceMacrosImplementation",
            dependencies: ["SluiceNaming", .product(name: "SwiftSyntaxMacros", package: "swift-syntax")]
        ),
        .macro(
            name: "SluiceMacrosPlugin",
            dependencies: [
                "SluiceMacrosImplementation",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "SluiceMacros", dependencies: ["Sluice", "SluiceMacrosPlugin"]),
        .target(
            name: "SluiceViewModels",
            dependencies: ["Sluice", .product(name: "OpenCombineShim", package: "OpenCombine")],
            path: "Sources/ViewModels"
        ),
        // The demo domain: models, schema, data generator and the view models of the
        // articles (used by the CLI, the tests and the guides; not part of the store).
        .target(
            name: "SluiceDemo",
            dependencies: ["Sluice", "SluiceMacros", "SluiceViewModels", "SluiceSyncClient", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        // The CLI's commands live in a library the tests import; the executable only calls it.
        .target(
            name: "SluiceCLI",
            dependencies: [
                "Sluice",
                "SluiceDemo",
                "SluiceViewModels",
                "SluiceSyncClient",
                "SluiceSyncProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CSV", package: "CSV.swift"),
                .product(name: "Rainbow", package: "Rainbow"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        .executableTarget(name: "sluice", dependencies: ["SluiceCLI"]),
        // What devices and the service exchange: values, clocks, messages, the registered schema.
        .target(name: "SluiceSyncProtocol", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "SluiceSyncStore", dependencies: ["Sluice", "SluiceSyncPolicy", "SluiceSyncProtocol"]),
        .target(name: "SluiceSyncPolicy", dependencies: ["SluiceSyncProtocol"]),
        .target(name: "SluiceSyncClient", dependencies: ["Sluice", "SluiceSyncProtocol", "SluiceSyncStore"]),
        .target(name: "SluiceTestSupport", dependencies: ["Sluice", "CSQLite", "SluiceTestVFS", "SluiceTestProcess"], path: "Tests/Support"),
        .target(name: "SluiceSyncConformance", dependencies: ["Sluice", "SluiceDemo", "SluiceSyncClient", "SluiceSyncPolicy", "SluiceSyncProtocol", "SluiceSyncStore", "SluiceTestSupport"],
                path: "Tests/SyncConformance"),
        // A VFS for tests that need SQLite held at one step (a checkpoint mid-way).
        .target(name: "SluiceTestVFS", dependencies: ["CSQLite"], path: "Tests/SupportVFS"),
        // The test process's own settings and spawning: at most as many test cases at once as
        // the cooperative pool has threads; helpers spawned with no descriptor of the tests'.
        .target(name: "SluiceTestProcess", path: "Tests/SupportProcess"),
        // A writer process for the reliability tests (killed at random points, run side by side).
        .executableTarget(name: "sluice-stress", dependencies: ["Sluice", "SluiceDemo", "SluiceTestSupport"], path: "Tests/Stress"),
        .testTarget(name: "StoreTests", dependencies: ["Sluice", "SluiceNaming", "SluiceDemo", "SluiceTestSupport", "sluice-stress", "CSQLite"]),
        .testTarget(name: "CLITests", dependencies: ["Sluice", "SluiceDemo", "SluiceTestSupport", "SluiceCLI", "sluice", "SluiceSyncClient", "SluiceSyncConformance",
                                                    .product(name: "CSV", package: "CSV.swift")]),
        .testTarget(
            name: "ViewModelsTests",
            dependencies: ["Sluice", "SluiceDemo", "SluiceViewModels", "SluiceTestSupport", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        // The sync client's logic and the wire protocol, without PostgreSQL or a service.
        .testTarget(
            name: "SluiceSyncClientTests",
            dependencies: ["Sluice", "SluiceSyncClient", "SluiceSyncProtocol", "SluiceDemo", "SluiceTestSupport", "SluiceSyncConformance", "SluiceSyncPolicy"],
            // Store files written by earlier versions of the client, opened by the upgrade tests.
            exclude: ["Fixtures"]
        ),
        // The public API as an app sees it: imports the products only (no @testable, no internals).
        .testTarget(name: "SluiceAPITests", dependencies: ["Sluice", "SluiceViewModels", "SluiceMacros", "SluiceDemo", "SluiceTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// SLUICE_TEST_TARGETS="StoreTests ViewModelsTests" keeps only the test targets it names (and
// the packages only they use), so that a build of those suites compiles nothing else: CI's
// ThreadSanitizer run builds the store's, view models' and API suites this way
// (`swift build --product SluicePackageTests`: no CLI, no sync client or macro suites).
let keptTests = Context.environment["SLUICE_TEST_TARGETS"].map {
    Set($0.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init))
}
if let keptTests {
    package.targets.removeAll { $0.type == .test && !keptTests.contains($0.name) }
}

// The macro's expansion tests (and swift-macro-testing, which only they use). They depend on
// SluiceMacrosImplementation, not on the macro target: a test target that depends on a macro
// target makes SwiftPM build the whole test graph for the host, so the library and every
// dependency the tests share with the executables were compiled twice.
if keptTests?.contains("SluiceMacrosTests") ?? true {
    package.dependencies.append(.package(url: "https://github.com/pointfreeco/swift-macro-testing", from: "0.7.0"))
    package.targets.append(
        .testTarget(
            name: "SluiceMacrosTests",
            dependencies: [
                "SluiceMacrosImplementation",
                .product(name: "MacroTesting", package: "swift-macro-testing"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
            ]
        )
    )
}
