import SluiceMacros

/// A person: a package's recipient or sender, an entry of the people list.
@Table   // table, columns (snake_case), row reader and writer, key-path map
public struct Person: Hashable {
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
    ///
    /// - Parameters:
    ///   - id: the id; nil for SQLite to assign one.
    ///   - firstName: the first name.
    ///   - lastName: the last name.
    ///   - age: the age, if known.
    ///   - email: the e-mail address, if any.
    ///   - street: the street address.
    ///   - city: the city.
    ///   - postalCode: the postal code.
    ///   - country: the country.
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

    /// "First Last".
    public var fullName: String { "\(firstName) \(lastName)" }
}
