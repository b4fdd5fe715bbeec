/// Typed relationship paths inside `where { ... }`, through foreign keys:
///
/// ```swift
/// store.objects(Package.self).where { $0.related(\.recipientID, Person.self).city == "Oslo" }
/// store.objects(Package.self).where { $0.children(\PackageContent.packageID).count > 2 }
/// store.objects(Package.self).where { $0.children(\PackageContent.packageID).sum(\.weight) > 5000 }
/// store.objects(Package.self).where { $0.children(\PackageContent.packageID).any { $0.weight > 1000 } }
/// ```
///
/// Each compiles to the same SQL as the query string's path
/// (`recipient.city == 'Oslo'`, `contents.@count > 2`, ...): a correlated
/// subquery on the foreign key, with every value bound.
extension ModelQuery {
    /// The row a foreign-key property points at, to filter on its properties.
    ///
    /// - Parameters:
    ///   - foreignKey: this model's foreign-key property.
    ///   - target: the model it points at.
    /// - Returns: the related row, whose properties compare as columns (a JOIN).
    public func related<Target: Model, Key>(_ foreignKey: KeyPath<Root, Key>, _ target: Target.Type) -> RelatedModel<Root, Target> {
        RelatedModel(path: Root.column(for: foreignKey))
    }

    /// The rows of another model whose foreign-key property points at this row.
    ///
    /// - Parameter foreignKey: the other model's foreign-key property, pointing at this model.
    /// - Returns: the related rows, to aggregate, count or quantify.
    public func children<Child: Model, Key>(_ foreignKey: KeyPath<Child, Key>) -> RelatedRows<Root, Child> {
        RelatedRows(segment: Child.column(for: foreignKey).map { "\(Child.tableName)(\($0))" })
    }
}

/// The row a foreign key points at: `$0.related(\.recipientID, Person.self).city`.
@dynamicMemberLookup
public struct RelatedModel<Root: Model, Target: Model>: Sendable {
    /// The foreign-key column, or why the key path has none.
    let path: Result<String, StoreError>

    /// A property of the related row.
    ///
    /// - Parameter keyPath: a stored property of the related model.
    /// - Returns: its column, to compare.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Target, Value>) -> ModelColumn<Root, Value> {
        ModelColumn(column: path.flatMap { prefix in Target.column(for: keyPath).map { Column(prefix + "." + $0) } })
    }
}

/// The rows of a to-many relationship: their count, sums and extremes, and quantifiers.
public struct RelatedRows<Root: Model, Child: Model>: Sendable {
    /// `child_table(foreign_key)`, or why the key path has no column.
    let segment: Result<String, StoreError>

    private func aggregate<Value>(_ function: String, _ keyPath: PartialKeyPath<Child>) -> ModelColumn<Root, Value> {
        ModelColumn(column: segment.flatMap { segment in Child.column(for: keyPath).map { Column("\(segment).@\(function).\($0)") } })
    }

    /// How many related rows there are (`contents.@count`).
    public var count: ModelColumn<Root, Int> {
        ModelColumn(column: segment.map { Column("\($0).@count") })
    }

    /// The sum of a property over the related rows, 0 when there are none (`contents.@sum.weight`).
    ///
    /// - Parameter keyPath: a stored property of the related model.
    /// - Returns: the aggregate, as a column to compare.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func sum<Value>(_ keyPath: KeyPath<Child, Value>) -> ModelColumn<Root, Value> { aggregate("sum", keyPath) }
    /// The sum of an optional property's non-nil values.
    ///
    /// - Parameter keyPath: a stored property of the related model.
    /// - Returns: the aggregate, as a column to compare.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func sum<Value>(_ keyPath: KeyPath<Child, Value?>) -> ModelColumn<Root, Value> { aggregate("sum", keyPath) }
    /// The average of a property over the related rows (NULL when there are none: no comparison holds).
    ///
    /// - Parameter keyPath: a stored property of the related model.
    /// - Returns: the aggregate, as a column to compare.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func average<Value>(_ keyPath: KeyPath<Child, Value>) -> ModelColumn<Root, Double> { aggregate("avg", keyPath) }
    /// The smallest value of a property among the related rows.
    ///
    /// - Parameter keyPath: a stored property of the related model.
    /// - Returns: the aggregate, as a column to compare.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func min<Value>(_ keyPath: KeyPath<Child, Value>) -> ModelColumn<Root, Value> { aggregate("min", keyPath) }
    /// The largest value of a property among the related rows.
    ///
    /// - Parameter keyPath: a stored property of the related model.
    /// - Returns: the aggregate, as a column to compare.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func max<Value>(_ keyPath: KeyPath<Child, Value>) -> ModelColumn<Root, Value> { aggregate("max", keyPath) }

    /// The child filter's columns, as paths through the relationship.
    private func related(_ build: (ModelQuery<Child>) -> ModelFilter<Child>) -> Result<Predicate, StoreError> {
        segment.flatMap { segment in
            build(ModelQuery()).filter.map { filter in
                filter.resolvedPredicate.mapOperands { operand in
                    guard case .column(let name, let position) = operand else { return operand }
                    return .column("\(segment).\(name)", position: position)
                }
            }
        }
    }

    private func quantified(_ quantifier: Quantifier, _ build: (ModelQuery<Child>) -> ModelFilter<Child>) -> ModelFilter<Root> {
        // One related row must satisfy all of it (SUBQUERY).
        ModelFilter(related(build).map { Filter(.quantified(quantifier, $0)) })
    }

    /// How many related rows match the filter (all of it, on the same row), to
    /// compare with a number: NSPredicate's `SUBQUERY(contents, $c, ...).@count`.
    ///
    /// ```swift
    /// packages.where { $0.children(\PackageContent.packageID).count { $0.weight > 1000 } >= 2 }
    /// ```
    ///
    /// - Parameter build: the filter on a related row.
    /// - Returns: the count, to compare with a number.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func count(where build: (ModelQuery<Child>) -> ModelFilter<Child>) -> RelatedCount<Root> {
        RelatedCount(predicate: related(build))
    }

    /// At least one related row matches the filter (all of it, on the same row).
    ///
    /// - Parameter build: the filter on a related row.
    /// - Returns: the filter on this model.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func any(_ build: (ModelQuery<Child>) -> ModelFilter<Child>) -> ModelFilter<Root> { quantified(.any, build) }
    /// Every related row matches (true when there are none).
    ///
    /// - Parameter build: the filter on a related row.
    /// - Returns: the filter on this model.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func all(_ build: (ModelQuery<Child>) -> ModelFilter<Child>) -> ModelFilter<Root> { quantified(.all, build) }
    /// No related row matches.
    ///
    /// - Parameter build: the filter on a related row.
    /// - Returns: the filter on this model.
    /// - Complexity: O(1) to build; SQLite evaluates it as a correlated subquery per row, indexed on the foreign key when there is an index.
    public func none(_ build: (ModelQuery<Child>) -> ModelFilter<Child>) -> ModelFilter<Root> { quantified(.none, build) }
}

/// How many related rows match a filter (`children(...).count { ... }`),
/// compared with a number to make a filter.
public struct RelatedCount<Root: Model>: Sendable {
    let predicate: Result<Predicate, StoreError>

    private func compared(_ op: ComparisonOperator, _ count: Int) -> ModelFilter<Root> {
        ModelFilter(predicate.map { Filter(.counted($0, op, .value(.integer(Int64(count))))) })
    }

    /// Exactly `rhs` related rows match.
    ///
    /// - Parameters:
    ///   - lhs: the count of related rows that match.
    ///   - rhs: the number.
    /// - Returns: the filter on this model.
    public static func == (lhs: RelatedCount, rhs: Int) -> ModelFilter<Root> { lhs.compared(.equal, rhs) }
    /// Not exactly `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: the count of related rows that match.
    ///   - rhs: the number.
    /// - Returns: the filter on this model.
    public static func != (lhs: RelatedCount, rhs: Int) -> ModelFilter<Root> { lhs.compared(.notEqual, rhs) }
    /// Fewer than `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: the count of related rows that match.
    ///   - rhs: the number.
    /// - Returns: the filter on this model.
    public static func < (lhs: RelatedCount, rhs: Int) -> ModelFilter<Root> { lhs.compared(.less, rhs) }
    /// At most `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: the count of related rows that match.
    ///   - rhs: the number.
    /// - Returns: the filter on this model.
    public static func <= (lhs: RelatedCount, rhs: Int) -> ModelFilter<Root> { lhs.compared(.lessOrEqual, rhs) }
    /// More than `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: the count of related rows that match.
    ///   - rhs: the number.
    /// - Returns: the filter on this model.
    public static func > (lhs: RelatedCount, rhs: Int) -> ModelFilter<Root> { lhs.compared(.greater, rhs) }
    /// At least `rhs`.
    ///
    /// - Parameters:
    ///   - lhs: the count of related rows that match.
    ///   - rhs: the number.
    /// - Returns: the filter on this model.
    public static func >= (lhs: RelatedCount, rhs: Int) -> ModelFilter<Root> { lhs.compared(.greaterOrEqual, rhs) }
}
