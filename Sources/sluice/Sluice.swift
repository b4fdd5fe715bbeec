import ArgumentParser

@main
struct Sluice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sluice")
}
