import Store

/// A person: a package's recipient or sender, an entry of the people list.
public struct Person: Model, Hashable {
    /// `person`.
    public static let tableName = "person"

    /// The primary key; nil until inserted.
    public var id: Int64?
    /// First name (required).
    public var firstName: String
    /// Last name (required).
    public var lastName: String
    /// Age in years.
    public var age: Int?
    /// E-mail address.
    public var email: String?
    /// Street and number.
    public var street: String?
    /// City.
    public var city: String?
    /// Postal code, as text (codes may have letters and leading zeros).
    public var postalCode: String?
    /// Country.
    public var country: String?

    /// Creates a person.
    public init(
        id: Int64? = nil, firstName: String, lastName: String, age: Int? = nil, email: String? = nil,
        street: String? = nil, city: String? = nil, postalCode: String? = nil, country: String? = nil
    ) {
        self.id = id
        self.firstName = firstName
        self.lastName = lastName
        self.age = age
        self.email = email
        self.street = street
        self.city = city
        self.postalCode = postalCode
        self.country = country
    }

    /// Takes the id SQLite assigned.
    public mutating func didInsert(rowID: Int64) { id = rowID }

    /// Reads a person column by column: people lists are the largest
    /// results, and this skips Codable's per-property dispatch.
    public init(row: RowReader) throws {
        id = try row["id"]
        firstName = try row["first_name"]
        lastName = try row["last_name"]
        age = try row["age"]
        email = try row["email"]
        street = try row["street"]
        city = try row["city"]
        postalCode = try row["postal_code"]
        country = try row["country"]
    }

    /// "First Last".
    public var fullName: String { "\(firstName) \(lastName)" }

    /// Column names, as the schema spells them.
    public enum CodingKeys: String, CodingKey {
        case id
        case firstName = "first_name"
        case lastName = "last_name"
        case age, email, street, city
        case postalCode = "postal_code"
        case country
    }
}
