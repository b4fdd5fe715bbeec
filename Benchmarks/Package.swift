// swift-tools-version:6.0

import Foundation
import PackageDescription

// A path dependency's identity is its folder's name, which differs between
// checkouts ("main", "sluice", ...): compute it instead of spelling it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

// Benchmarks live in their own package so the library's manifest stays lean.
// Run in release mode: swift run -c release --package-path Benchmarks
let package = Package(
    name: "SluiceBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        // The command line (--help, --only's groups).
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // The peer some figures are printed beside (benchmarks only).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The raw SQLite C API, for the baseline each benchmark compares against.
        .systemLibrary(name: "BenchSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "sluice-benchmarks",
            dependencies: [
                "BenchSQLite",
                .product(name: "Sluice", package: root),
                .product(name: "SluiceDemo", package: root),
                .product(name: "SluiceSyncClient", package: root),
                .product(name: "SluiceSyncProtocol", package: root),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
