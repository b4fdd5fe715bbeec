import SluiceMacros

/// One item in a package.
@Table
public struct PackageContent: Hashable {
    /// The primary key; nil until inserted.
    public var id: Int64?
    /// The package it is in.
    public var packageID: Int64
    /// What it is.
    public var title: String
    /// Its weight in grams.
    public var weight: Int
    /// Its place in the package's list.
    public var position: Int
    // Its public memberwise initializer, init(id:packageID:title:weight:position:) with id
    // defaulting to nil, is @Table's: Swift's own would be internal.
}
