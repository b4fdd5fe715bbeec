import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncConformance
import SluiceTestSupport
import Testing

/// The demo's conflict inbox in a real terminal (tmux): a store whose two edits lost to
/// later ones shows the banner, lists them, restores one and dismisses the other; the store
/// holds what was restored, ready to push.
@Suite(.timeLimit(.minutes(10))) struct DemoConflictInboxTests {
    @Test(.enabled(if: DemoCommandTests.TmuxSession.executable != nil, "needs tmux"))
    func theDemoShowsTheInboxAndRestoresAndDismisses() async throws {
        let cli = CommandRunner()
        let database = cli.path("phone.sqlite")
        let service = try HistoryService()
        let token = service.newToken()
        let phone = try SyncConformance.Device(service, token: token, path: database)
        let laptop = try SyncConformance.Device(service, token: token)
        try phone.sql("INSERT INTO person (first_name, last_name, city, email) VALUES ('Ann', 'Berg', 'Oslo', 'ann@old.example')")
        try await phone.client.sync()
        try await laptop.client.sync()
        // The phone edits two columns first; the laptop edits them later and syncs first.
        try phone.sql("UPDATE person SET city = 'Phone city', email = 'ann@phone.example'")
        try await Task.sleep(for: .milliseconds(20))
        try laptop.sql("UPDATE person SET city = 'Laptop city', email = 'ann@laptop.example'")
        try await laptop.client.sync()
        try await phone.client.sync()
        try #require(try SyncClient.conflicts(in: phone.store).count == 2)

        // The demo follows a service that is not there: the inbox is the store's, offline.
        let session = DemoCommandTests.TmuxSession()
        try session.start("'\(CommandRunner.binary.path)' demo --db '\(database)' --sync-server http://127.0.0.1:9 --sync-token slt_offline")
        #expect(try session.waitFor("2 edits were replaced by newer ones — review (type conflicts)"), "\((try? session.screen()) ?? "")")
        try session.type("conflicts")
        #expect(try session.waitFor("Sluice demo · conflicts (2)"), "\((try? session.screen()) ?? "")")
        #expect(try session.screen().contains("kept Laptop city, replaced Phone city"), "\((try? session.screen()) ?? "")")
        try session.type("restore 1")
        #expect(try session.waitFor("Sluice demo · conflicts (1)"), "\((try? session.screen()) ?? "")")
        try session.type("dismiss 1")
        #expect(try session.waitFor("nothing was lost"), "\((try? session.screen()) ?? "")")
        try session.type("restore 1")
        #expect(try session.waitFor("the inbox is empty"), "\((try? session.screen()) ?? "")")
        try session.type("quit")

        // The restored value is the phone's again, a local change waiting to push; the
        // dismissed one stays the laptop's.
        let rows = try phone.rows("SELECT city, email FROM person")
        #expect(rows == ["Phone city|ann@laptop.example"] || rows == ["Laptop city|ann@phone.example"], "\(rows)")
        #expect(try SyncClient.conflicts(in: phone.store).isEmpty)
        try await phone.client.sync()
        try await laptop.client.sync()
        #expect(try laptop.rows("SELECT city, email FROM person") == rows, "the restore synced")
    }
}
