// swift-tools-version:6.0

import Foundation
import PackageDescription

// A path dependency's identity is its folder's name, which differs between
// checkouts ("sluice", "main", ...): compute it instead of spelling it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

// The sync service: its own package, so that an app depending on the library resolves
// none of the server's packages (Hummingbird, PostgreSQL, the NIO stack).
//   swift run --package-path Server sluice-sync --help
//   swift test --package-path Server --scratch-path .build   (from the root: the library is built once)
let package = Package(
    name: "SluiceServer",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "SluiceSync", targets: ["SluiceSync"]),
        .executable(name: "sluice-sync", targets: ["sluice-sync"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .target(
            name: "SluiceSync",
            dependencies: [
                .product(name: "SluiceSyncProtocol", package: root),
                .product(name: "SluiceSyncStore", package: root),
                .product(name: "SluiceSyncPolicy", package: root),
                .product(name: "Sluice", package: root),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        // Development only, not a product: a throwaway PostgreSQL for `serve --throwaway-postgres` and the tests.
        .target(name: "SluiceSyncDevelopment"),
        .executableTarget(
            name: "sluice-sync",
            dependencies: [
                "SluiceSync", "SluiceSyncDevelopment",
                .product(name: "SluiceSyncStore", package: root),
                .product(name: "SluiceDemo", package: root),
                .product(name: "Sluice", package: root),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // Devices, the CLI and the service against a real PostgreSQL, with faults.
        .testTarget(
            name: "SluiceSyncTests",
            dependencies: [
                "SluiceSync", "SluiceSyncDevelopment", "sluice-sync",
                .product(name: "Sluice", package: root),
                .product(name: "SluiceDemo", package: root),
                .product(name: "SluiceSyncClient", package: root),
                .product(name: "SluiceSyncProtocol", package: root),
                .product(name: "SluiceTestSupport", package: root),
                .product(name: "SluiceSyncConformance", package: root),
                .product(name: "sluice", package: root),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
