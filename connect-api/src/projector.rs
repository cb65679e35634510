//! `SchemaProjector`: project a value of one schema onto a compatible schema.
