// What the client and the service both need of the store (values and the
// registered schema read from a database) lives in SluiceSyncStore; an app
// that imports the client has it too.
@_exported import SluiceSyncStore
