import Foundation

/// FTS5's `bm25`, computed from its parts (`sluice_bm25_parts`, registered
/// on every connection) with the same operations in the same order, so that
/// a live search can score the rows a commit left alone without reading
/// them: a row's parts change only with its text, the index's figures with
/// every commit.
///
/// Whether the result equals SQLite's to the bit is checked on every row
/// the first time a search reads all its matches; when it does not (another
/// SQLite's bm25, a compiler that fuses operations), the search reads
/// SQLite's own scores instead.
///
/// Related SQLite documentation: <https://www.sqlite.org/fts5.html#the_bm25_function>
enum BM25 {
    /// The index's figures at one state: its rows, its tokens, and for each
    /// phrase of the query the rows that hold it.
    struct Figures: Equatable {
        var rows: Int64
        var tokens: Int64
        var hits: [Int64]
    }

    /// One row's parts: its tokens, and its weighted count of each phrase.
    struct Parts: Equatable {
        var tokens: Int64
        var frequencies: [Double]
    }

    /// Reads `sluice_bm25_parts`' blob; nil when it is not one.
    static func read(_ bytes: UnsafeRawBufferPointer) -> (Figures, Parts)? {
        let slot = MemoryLayout<Int64>.size
        guard bytes.count >= 3 * slot, (bytes.count - 3 * slot) % (2 * slot) == 0 else { return nil }
        func integer(_ index: Int) -> Int64 { bytes.loadUnaligned(fromByteOffset: index * slot, as: Int64.self) }
        func real(_ index: Int) -> Double { bytes.loadUnaligned(fromByteOffset: index * slot, as: Double.self) }
        let phrases = (bytes.count / slot - 3) / 2
        let figures = Figures(rows: integer(0), tokens: integer(1), hits: (0..<phrases).map { integer(3 + 2 * $0) })
        let parts = Parts(tokens: integer(2), frequencies: (0..<phrases).map { real(4 + 2 * $0) })
        return (figures, parts)
    }

    /// What every row's score shares at one state: each phrase's inverse
    /// document frequency and the average row length.
    struct Scorer {
        let idf: [Double]
        let averageLength: Double

        init(_ figures: Figures) {
            // As fts5Bm25GetData: avgdl = nToken / nRow; idf = log((N - nHit + 0.5) / (nHit + 0.5)), at least 1e-6.
            averageLength = Double(figures.tokens) / Double(figures.rows)
            idf = figures.hits.map { hits in
                let idf = log((Double(figures.rows - hits) + 0.5) / (Double(hits) + 0.5))
                return idf <= 0 ? 1e-6 : idf
            }
        }

        /// The row's bm25: as fts5Bm25Function, the sum over phrases of
        /// idf × (f × (k1 + 1)) / (f + k1 × (1 − b + b × D / avgdl)), negated.
        func score(_ parts: Parts) -> Double {
            let k1 = 1.2
            let b = 0.75
            let length = Double(parts.tokens)
            var score = 0.0
            for (index, frequency) in parts.frequencies.enumerated() where index < idf.count {
                score += idf[index] * ((frequency * (k1 + 1.0)) / (frequency + k1 * (1 - b + b * length / averageLength)))
            }
            return -1.0 * score
        }
    }
}
