/// Where the observation center hears of commits: this store's writer
/// (`CommitListener`) and the watch on the file (`ExternalCommitSink`).
extension ObservationCenter: CommitListener {
    func committed(_ changes: ChangedRows, silenced: Set<ObjectIdentifier>, number: UInt32?) {
        record(changes, silenced: silenced, own: number, external: false)
    }
}

extension ObservationCenter: ExternalCommitSink {
    func externalCommitNoticed() {
        record(.external, silenced: [], own: nil, external: true)
    }

    func filesWritten() {
        queue.async { self.scheduleIdleUpkeep() }
    }

    /// Ends every observation with `error` (on the queue, after the
    /// deliveries queued before it): the store's file was replaced.
    func fileReplaced(_ error: StoreError) {
        queue.async {
            for id in self.order { (self.observations[id] as? FailableObservation)?.fail(error) }
        }
    }
}

/// An observation that can report that it cannot run.
protocol FailableObservation {
    func fail(_ error: StoreError)
}
