import Foundation
import Sluice
import SluiceDemo
import SluiceTestSupport

// A writer process for the reliability tests (not a product).
//
//   sluice-stress batches PATH      commit numbered batches forever, printing
//                                   "committed N" after each commit (to be SIGKILLed)
//   sluice-stress churn PATH SECS   random inserts/updates/deletes for SECS seconds;
//                                   prints "ok COMMITS" or "busy ERROR" and exits non-zero
//   sluice-stress insert PATH       inserts one person; prints "ok" or "error DESCRIPTION"
//   sluice-stress crash-with-helper PIDFILE
//                                   starts `sleep 600` sharing this process's standard output,
//                                   registers it with TestWatchdog, writes its pid, then dies (SIGKILL)
//
// With SLUICE_STRESS_AS_NOBODY=1, a process started as root first becomes
// `nobody`, so that file permissions apply (root ignores them).

/// Writes a line to standard output at once (the parent reads it as it comes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: sluice-stress batches|churn PATH [SECONDS]\n".utf8))
    exit(2)
}
let path = arguments[2]

if arguments[1] == "crash-with-helper" {
    // A test process that crashes with a helper running, as a crashed test did.
    let helper = Process()
    helper.executableURL = URL(fileURLWithPath: "/bin/sleep")
    helper.arguments = ["600"]
    try helper.run()
    TestWatchdog.killOnExit(helper.processIdentifier)
    try Data("\(helper.processIdentifier)".utf8).write(to: URL(fileURLWithPath: path))
    say("started \(helper.processIdentifier)")
    // Killed outright: abort() runs Swift's backtracer first, which symbolicates for as long
    // as a loaded machine takes (over a minute in a CI run) with the same standard output.
    kill(getpid(), SIGKILL)
}

#if canImport(Glibc)
if ProcessInfo.processInfo.environment["SLUICE_STRESS_AS_NOBODY"] == "1", getuid() == 0 {
    guard setgid(65534) == 0, setuid(65534) == 0 else {
        say("error cannot become nobody")
        exit(3)
    }
}
#endif

do {
    let store = arguments[1] == "insert" ? nil : try Store(path: path, migrations: DemoSchema.migrations)
    switch arguments[1] {
    case "insert":
        do {
            let store = try Store(path: path)
            try store.write { tx in try tx.insert(Person(firstName: "Written", lastName: "Once")) }
            say("ok")
        } catch {
            say("error \(error)")
            exit(1)
        }
    case "batches":
        // Each batch: `size` people named after the batch, and a ledger
        // message saying how many, all in one transaction.
        guard let store else { exit(2) }
        var batch = (try store.read { db in
            try db.fetchRows(sql: "SELECT COALESCE(MAX(conversation_id), 0) FROM message WHERE sender = 'ledger'")
        }.first.flatMap { Int64(sqliteValue: $0[0]) } ?? 0) + 1
        while true {
            let size = Int.random(in: 1...300)
            try store.write { tx in
                for index in 0..<size {
                    try tx.insert(Person(firstName: "batch-\(batch)", lastName: "\(index)", age: index % 90))
                }
                try tx.insert(Message(conversationID: batch, sender: "ledger", text: "\(size)"))
            }
            say("committed \(batch)")
            batch += 1
        }
    case "churn":
        guard let store else { exit(2) }
        let seconds = Double(arguments.count > 3 ? arguments[3] : "5") ?? 5
        let deadline = Date().addingTimeInterval(seconds)
        var commits = 0
        while Date() < deadline {
            do {
                try store.write { tx in
                    for _ in 0..<Int.random(in: 1...5) {
                        switch Int.random(in: 0..<10) {
                        case 0..<3:
                            try tx.insert(Person(firstName: ["Zoë", "Ana", "émile", "Bob", "李"].randomElement() ?? "A",
                                                 lastName: "p\(getpid())", age: Bool.random() ? Int.random(in: 0..<90) : nil,
                                                 city: ["Oslo", "oslo", nil].randomElement() ?? nil))
                        case 4..<7:
                            try tx.execute(sql: "UPDATE person SET age = ?, first_name = ? WHERE id = (SELECT id FROM person ORDER BY random() LIMIT 1)",
                                           arguments: [.integer(Int64.random(in: 0..<90)), .text(["Zoë", "Ana", "Émile", "bob"].randomElement() ?? "A")])
                        default:
                            try tx.execute(sql: "DELETE FROM person WHERE id = (SELECT id FROM person ORDER BY random() LIMIT 1)")
                        }
                    }
                }
                commits += 1
            } catch let error as StoreError where error.code == .busy || error.code == .locked {
                say("busy \(error)")
                exit(1)
            }
        }
        say("ok \(commits)")
    default:
        FileHandle.standardError.write(Data("unknown mode \(arguments[1])\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}
