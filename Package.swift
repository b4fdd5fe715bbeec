// swift-tools-version:6.0

import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Sluice",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "Store", targets: ["Store"]),
        .library(name: "SluiceDemo", targets: ["SluiceDemo"]),
        .library(name: "ViewModels", targets: ["ViewModels"]),
        // The @Table model macro: its own product, so an app with Codable models does not build swift-syntax.
        .library(name: "SluiceMacros", targets: ["SluiceMacros"]),
        .executable(name: "sluice", targets: ["sluice"]),
        // Sync: the device side (no server dependencies) and the service (Hummingbird, PostgreSQL).
        .library(name: "SluiceSyncClient", targets: ["SluiceSyncClient"]),
        .library(name: "SluiceSync", targets: ["SluiceSync"]),
        .executable(name: "sluice-sync", targets: ["sluice-sync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.2"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        .package(url: "https://github.com/onevcat/Rainbow", from: "4.2.2"),
        // `swift package generate-documentation` for the DocC catalogs (a plugin: nothing of it is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", "600.0.0"..<"604.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-macro-testing", from: "0.7.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite3"])]
        ),
        // How Swift names become column names: one rule for the store and the macro.
        .target(name: "SluiceNaming"),
        .target(
            name: "Store",
            dependencies: ["CSQLite", "SluiceNaming", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        .macro(
            name: "SluiceMacrosPlugin",
            dependencies: [
                "SluiceNaming",
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "SluiceMacros", dependencies: ["Store", "SluiceMacrosPlugin"]),
        // The demo domain: models, schema and data generator (used by the
        // view models, the CLI and the tests; not part of the store).
        .target(name: "SluiceDemo", dependencies: ["Store", "SluiceMacros"]),
        .target(
            name: "ViewModels",
            dependencies: ["Store", "SluiceDemo", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        // The CLI's commands live in a library the tests import; the executable only calls it.
        .target(
            name: "SluiceCLI",
            dependencies: [
                "Store",
                "SluiceDemo",
                "ViewModels",
                "SluiceSyncClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CSV", package: "CSV.swift"),
                .product(name: "Rainbow", package: "Rainbow"),
                .product(name: "OpenCombineShim", package: "OpenCombine"),
            ]
        ),
        .executableTarget(name: "sluice", dependencies: ["SluiceCLI"]),
        // What devices and the service exchange: values, clocks, messages, the registered schema.
        .target(name: "SluiceSyncProtocol"),
        .target(name: "SluiceSyncClient", dependencies: ["Store", "SluiceSyncProtocol"]),
        .target(
            name: "SluiceSync",
            dependencies: [
                "SluiceSyncProtocol",
                "Store",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "sluice-sync",
            dependencies: [
                "SluiceSync",
                "SluiceSyncClient",
                "SluiceDemo",
                "Store",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(name: "SluiceTestSupport", dependencies: ["Store", "CSQLite"], path: "Tests/Support"),
        // A writer process for the reliability tests (killed at random points, run side by side).
        .executableTarget(name: "sluice-stress", dependencies: ["Store", "SluiceDemo"], path: "Tests/Stress"),
        .testTarget(name: "StoreTests", dependencies: ["Store", "SluiceNaming", "SluiceDemo", "SluiceTestSupport", "sluice-stress", "CSQLite"]),
        .testTarget(name: "CLITests", dependencies: ["Store", "SluiceDemo", "SluiceTestSupport", "SluiceCLI", "sluice", .product(name: "CSV", package: "CSV.swift")]),
        .testTarget(
            name: "ViewModelsTests",
            dependencies: ["Store", "SluiceDemo", "ViewModels", "SluiceTestSupport", .product(name: "OpenCombineShim", package: "OpenCombine")]
        ),
        // The public API as an app sees it: imports the products only (no @testable, no internals).
        .testTarget(name: "SluiceAPITests", dependencies: ["Store", "ViewModels", "SluiceMacros", "SluiceDemo"]),
        .testTarget(
            name: "SluiceSyncTests",
            dependencies: [
                "Store", "SluiceDemo", "SluiceSyncClient", "SluiceSyncProtocol", "SluiceSync", "SluiceTestSupport", "sluice-sync", "sluice",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "SluiceMacrosTests",
            dependencies: [
                "SluiceMacrosPlugin",
                .product(name: "MacroTesting", package: "swift-macro-testing"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
