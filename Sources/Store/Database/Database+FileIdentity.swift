// A writer refuses to write into a file that is no longer the one at its
// path: what it committed there, no one would read.
extension Database {
    /// Throws `.fileReplaced` when the file this connection writes is no
    /// longer the one at its path: a write there would commit into a file no
    /// one will read again.
    func checkFileInPlace() throws {
        guard connection.hasMoved else { return }
        throw Self.fileReplaced(connection.path)
    }

    static func fileReplaced(_ path: String) -> StoreError {
        StoreError(code: .fileReplaced, message: "the database file at \(path) was replaced or deleted while the store had it open; "
                   + "nothing more is written to the old file (no one could read it): open the store again to use the file at that path")
    }
}
