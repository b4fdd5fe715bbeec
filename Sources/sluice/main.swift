import SluiceCLI

await SluiceCommandLine.main()
