import Foundation
import SluiceTestProcess

/// How many test cases Swift Testing runs at once in this process: as many as the
/// cooperative pool has threads (set when the process loads; see `TestParallelism.c`).
public enum TestParallelism {
    /// The width Swift Testing read from the environment (0 if none was set).
    public static var width: Int { Int(sluice_test_parallelism_width()) }
}
