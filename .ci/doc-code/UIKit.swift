// A stand-in for the parts of UIKit the guides' examples use, so that
// `.ci/check-doc-code` compiles those examples on Linux too: UIKit's shapes
// and isolation (its views are `@MainActor`), no behaviour. Not a product.
import Foundation

@MainActor open class UIView {
    public init() {}
}

@MainActor open class UITableView: UIView {
    public enum RowAnimation: Sendable { case automatic, fade, none }
    open func reloadData() {}
    open func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) { updates?() }
    open func insertRows(at indexPaths: [IndexPath], with animation: RowAnimation) {}
    open func deleteRows(at indexPaths: [IndexPath], with animation: RowAnimation) {}
    open func reloadRows(at indexPaths: [IndexPath], with animation: RowAnimation) {}
    open func moveRow(at indexPath: IndexPath, to newIndexPath: IndexPath) {}
    open func insertSections(_ sections: IndexSet, with animation: RowAnimation) {}
    open func deleteSections(_ sections: IndexSet, with animation: RowAnimation) {}
}

@MainActor open class UICollectionView: UIView {
    open func reloadData() {}
    open func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) { updates?() }
    open func insertItems(at indexPaths: [IndexPath]) {}
    open func deleteItems(at indexPaths: [IndexPath]) {}
    open func reloadItems(at indexPaths: [IndexPath]) {}
    open func moveItem(at indexPath: IndexPath, to newIndexPath: IndexPath) {}
}

@MainActor open class UIViewController {
    public init() {}
    open func viewDidLoad() {}
}

extension IndexPath {
    /// UIKit's row-and-section index path.
    public init(row: Int, section: Int) { self.init(indexes: [section, row]) }
    public var row: Int { self[1] }
    public var section: Int { self[0] }
}
