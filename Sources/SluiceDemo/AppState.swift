import SluiceMacros

/// Shared app state: one row (id 1) that several view models read.
@Table
public struct AppState: Hashable {
    /// The id of the one row.
    public static let singletonID: Int64 = 1

    /// Always 1.
    public var id: Int64
    /// The signed-in person, if any.
    public var currentUserID: Int64?
    /// Low temperature limit (°C).
    public var temperatureLow: Double
    /// High temperature limit (°C); always at least `temperatureLow + 10`.
    public var temperatureHigh: Double

    /// Creates the state row.
    ///
    /// - Parameters:
    ///   - id: the row's id (there is one row).
    ///   - currentUserID: the signed-in person, if any.
    ///   - temperatureLow: the low limit.
    ///   - temperatureHigh: the high limit.
    public init(id: Int64 = AppState.singletonID, currentUserID: Int64? = nil, temperatureLow: Double = 15, temperatureHigh: Double = 25) {
        self.id = id
        self.currentUserID = currentUserID
        self.temperatureLow = temperatureLow
        self.temperatureHigh = temperatureHigh
    }
}
