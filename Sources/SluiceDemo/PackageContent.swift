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

    /// Creates an item.
    public init(id: Int64? = nil, packageID: Int64, title: String, weight: Int, position: Int) {
        self.id = id
        self.packageID = packageID
        self.title = title
        self.weight = weight
        self.position = position
    }
}
