"""The models of the mini artifacts (tests/fixtures/artifacts/mini) whose column lineage the
tests analyse."""

MODELS = {
    "model.jaffle_oml.stg_orders",
    "model.jaffle_oml.stg_customers",
    "model.jaffle_oml.core_orders",
    "model.jaffle_oml.core_customers",
    "model.jaffle_oml.revenue_by_country",
}
