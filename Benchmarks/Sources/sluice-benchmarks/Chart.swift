import Foundation

/// The README's chart: chosen rows of a run as bars on a logarithmic time axis, Sluice beside
/// the baseline it is measured against, written as SVG (`--chart=PATH`).
struct Chart {
    struct Bar {
        let label: String
        let sluice: Double      // seconds
        let peer: Double        // seconds
        let peerName: String
    }

    private(set) var bars: [Bar] = []

    mutating func add(_ label: String, sluice: Double, peer: Double, peerName: String) {
        bars.append(Bar(label: label, sluice: sluice, peer: peer, peerName: peerName))
    }

    /// The SVG, captioned with the date and commit the figures come from.
    func svg(caption: String) -> String {
        let labelWidth = 330.0, plotWidth = 400.0, valueWidth = 70.0
        let rowHeight = 40.0, top = 30.0
        let width = labelWidth + plotWidth + valueWidth
        let height = top + Double(bars.count) * rowHeight + 50
        // 10 µs to 10 s: six decades.
        let lowest = -5.0, highest = 1.0
        func x(_ seconds: Double) -> Double {
            let decade = min(max(log10(max(seconds, 1e-9)), lowest), highest)
            return labelWidth + (decade - lowest) / (highest - lowest) * plotWidth
        }
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="8" y="18" font-weight="bold">Time (log scale): Sluice (teal) and its baseline (grey), release build</text>

            """
        for (index, tick) in ["10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"].enumerated() {
            let position = x(pow(10, lowest + Double(index)))
            out += "<line x1=\"\(position)\" y1=\"\(top)\" x2=\"\(position)\" y2=\"\(height - 40)\" stroke=\"#ddd\"/>"
            out += "<text x=\"\(position)\" y=\"\(height - 26)\" text-anchor=\"middle\" fill=\"#555\">\(tick)</text>\n"
        }
        for (index, bar) in bars.enumerated() {
            let y = top + Double(index) * rowHeight
            out += "<text x=\"8\" y=\"\(y + 14)\">\(escape(bar.label))</text>"
            out += "<text x=\"8\" y=\"\(y + 29)\" fill=\"#777\">vs \(escape(bar.peerName))</text>\n"
            for (offset, value, color) in [(4.0, bar.sluice, "#1b998b"), (20.0, bar.peer, "#9a9a9a")] {
                let end = x(value)
                out += "<rect x=\"\(labelWidth)\" y=\"\(y + offset)\" width=\"\(max(end - labelWidth, 1))\" height=\"13\" fill=\"\(color)\"/>"
                out += "<text x=\"\(end + 4)\" y=\"\(y + offset + 11)\" fill=\"#333\">\(Self.format(value))</text>\n"
            }
        }
        out += "<text x=\"8\" y=\"\(height - 8)\" fill=\"#555\">\(escape(caption))</text>\n</svg>\n"
        return out
    }

    static func format(_ seconds: Double) -> String {
        switch seconds {
        case ..<1e-3: String(format: "%.0f µs", seconds * 1e6)
        case ..<1: String(format: "%.1f ms", seconds * 1e3)
        default: String(format: "%.2f s", seconds)
        }
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// The short commit of the repository the benchmarks ran from, or "unknown".
    static func commit() -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git", "-C", URL(fileURLWithPath: #filePath).deletingLastPathComponent().path, "rev-parse", "--short", "HEAD"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "unknown" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return process.terminationStatus == 0 && !text.isEmpty ? text : "unknown"
    }
}
