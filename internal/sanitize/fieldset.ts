// What managedFields records of each manager: the fields it owns, in structured-merge-diff's
// notation. Read by the split of owned from unowned values and by the last-applied narrowing.

/**
 * One manager's fieldsV1 set (structured-merge-diff): `f:<field>` for a map field, `k:<json>`
 * (an associative list's item by its key fields), `v:<json>` (a set's item by value) and
 * `i:<n>` (an item by index) for list items, `.` for the map or item itself. A set with no
 * members owns its value whole: a scalar, or an atomic map or list.
 */
export type FieldSet = { readonly [member: string]: FieldSet };
