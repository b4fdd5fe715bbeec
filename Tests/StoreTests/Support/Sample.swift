import Foundation
import Sluice

/// A model with a column of every kind the row coder handles.
struct Sample: Model, Equatable {
    static let tableName = "sample"
    static let schema = Migration(version: 1, name: "create_sample", sql: """
        CREATE TABLE sample (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            nickname TEXT,
            count INTEGER NOT NULL,
            small INTEGER,
            score REAL NOT NULL,
            ratio REAL,
            flag INTEGER NOT NULL,
            payload BLOB,
            created TEXT NOT NULL,
            mood TEXT NOT NULL,
            level INTEGER NOT NULL,
            tags TEXT NOT NULL,
            unsigned INTEGER NOT NULL
        )
        """)

    enum Mood: String, Codable { case happy, grumpy, ünïcödé = "ünïcödé" }
    enum Level: Int, Codable { case low = 1, high = 99 }
    struct Tags: Codable, Equatable { var names: [String]; var weight: Double }

    var id: Int64?
    var name: String
    var nickname: String?
    var count: Int64
    var small: Int32?
    var score: Double
    var ratio: Double?
    var flag: Bool
    var payload: Data?
    var created: Date
    var mood: Mood
    var level: Level
    var tags: Tags
    var unsigned: UInt32

    mutating func didInsert(rowID: Int64) { id = rowID }

    static func make(name: String = "plain") -> Sample {
        Sample(id: nil, name: name, nickname: nil, count: 0, small: nil, score: 0, ratio: nil, flag: false,
               payload: nil, created: Date(timeIntervalSince1970: 0), mood: .happy, level: .low,
               tags: Tags(names: [], weight: 0), unsigned: 0)
    }
}
