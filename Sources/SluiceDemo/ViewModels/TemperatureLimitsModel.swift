import Foundation
import OpenCombineShim
import SluiceViewModels
import Sluice

/// Low and high temperature limits, persisted in the shared app state: high
/// is always at least low + 10, so moving one pushes the other. The text
/// fields go through a `NumberFormatter`; a non-number is rejected by
/// restoring the last valid text.
@MainActor
public final class TemperatureLimitsModel: ObservableObject {
    /// The smallest gap between the limits.
    public static let minimumGap = 10.0

    /// The low limit.
    @Published public private(set) var low = 15.0
    /// The high limit.
    @Published public private(set) var high = 25.0
    /// The low field's text.
    @Published public var lowText = "" { didSet { edited(\.lowText, old: oldValue) } }
    /// The high field's text.
    @Published public var highText = "" { didSet { edited(\.highText, old: oldValue) } }
    /// The last error from a write.
    @Published public private(set) var lastError: StoreError?

    /// Formats and parses the fields: whole or decimal numbers, locale-independent.
    public let formatter: NumberFormatter = {
        let formatter = NumberFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.numberStyle = .decimal
        formatter.usesGroupingSeparator = false
        formatter.maximumFractionDigits = 1
        return formatter
    }()

    private let writes: WriteQueue
    private var cancellables = Set<AnyCancellable>()
    private var updatingText = false

    /// Limits kept in `store`'s app state.
    ///
    /// - Parameter store: the store.
    public init(store: Store) {
        writes = WriteQueue(store: store)
        writes.failed = { [weak self] error in self?.lastError = error }
        store.objectValuePublisher(AppState.self, id: AppState.singletonID)
            .sink { @Sendable [weak self] state in
                guard let state else { return }
                DispatchQueue.main.async { MainActor.assumeIsolated { self?.show(state) } }
            }
            .store(in: &cancellables)
    }

    private func show(_ state: AppState) {
        low = state.temperatureLow
        high = state.temperatureHigh
        setText(\.lowText, low)
        setText(\.highText, high)
    }

    private func setText(_ field: ReferenceWritableKeyPath<TemperatureLimitsModel, String>, _ value: Double) {
        let text = formatter.string(from: NSNumber(value: value)) ?? ""
        guard self[keyPath: field] != text else { return }
        updatingText = true
        self[keyPath: field] = text
        updatingText = false
    }

    private func edited(_ field: ReferenceWritableKeyPath<TemperatureLimitsModel, String>, old: String) {
        guard !updatingText, self[keyPath: field] != old else { return }
        let text = self[keyPath: field]
        guard let number = formatter.number(from: text)?.doubleValue, number.isFinite else {
            // Not a number (or empty): put the last valid text back.
            if !text.isEmpty || !old.isEmpty {
                updatingText = true
                self[keyPath: field] = old
                updatingText = false
            }
            return
        }
        if field == \TemperatureLimitsModel.lowText { setLow(number) } else { setHigh(number) }
    }

    /// Sets the low limit, pushing the high one up when needed.
    ///
    /// - Parameter value: the new low limit.
    public func setLow(_ value: Double) {
        save(low: value, high: max(high, value + Self.minimumGap))
    }

    /// Sets the high limit, pushing the low one down when needed.
    ///
    /// - Parameter value: the new high limit.
    public func setHigh(_ value: Double) {
        save(low: min(low, value - Self.minimumGap), high: value)
    }

    private func save(low: Double, high: Double) {
        self.low = low
        self.high = high
        setText(\.lowText, low)
        setText(\.highText, high)
        writes.enqueue { tx in
            try tx.update(AppState.self, id: AppState.singletonID) {
                $0.temperatureLow = low
                $0.temperatureHigh = high
            }
        }
    }

    /// Waits until the limits set so far are stored.
    public func waitForWrites() async {
        await writes.idle()
    }
}
