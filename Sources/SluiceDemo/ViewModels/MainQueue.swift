import Foundation
import OpenCombineShim

/// The main queue as a Combine scheduler: `DispatchQueue` itself with
/// Combine, OpenCombine's wrapper of it elsewhere.
enum MainQueue {
    #if canImport(Combine)
    static var scheduler: DispatchQueue { .main }
    #else
    static var scheduler: DispatchQueue.OCombine { DispatchQueue.main.ocombine }
    #endif
}
