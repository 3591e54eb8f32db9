// Store tests of upgrades from older schemas: a store set back to an earlier schema (SQLite's
// user_version, PostgreSQL's mailsift_schema) comes back to the current one when opened, with what
// the upgrade adds (the last refit's table, the refit mark, corrections.layer_user); on every backend
// (FOR_EACH_BACKEND).
#include "mailsift/store/training_batch.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "../support/backends.hpp"
#include "store_support.hpp"

using namespace mailsift;
using mailsift::testing::digest;
using store::Class;

namespace {

// The store set back to an earlier schema (SQLite's user_version, PostgreSQL's
// mailsift_schema), then opened: it must come back to the current one.
template <class Store>
std::unique_ptr<store::Database> reopened_from(Store& s, int sqlite_version, int pg_version) {
    const bool sqlite = s.kind() == "sqlite";
    s.exec(sqlite ? "PRAGMA user_version = " + std::to_string(sqlite_version)
                  : "UPDATE mailsift_schema SET version = " + std::to_string(pg_version));
    auto db = s.open();
    CHECK(s.value(sqlite ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          db->statistics().schema_version);
    return db;
}

}  // namespace

TEST_CASE("A store written before the last refit was kept (SQLite schema 17, PostgreSQL 12) gets its table, empty",
          "[store]") {
    FOR_EACH_BACKEND(s);
    s.open();  // created at the current schema
    s.exec("DROP TABLE linear_refit");
    s.exec(s.kind() == "sqlite" ? "PRAGMA user_version = 17" : "UPDATE mailsift_schema SET version = 12");
    auto db = s.open();
    CHECK(s.value(s.kind() == "sqlite" ? "PRAGMA user_version" : "SELECT version FROM mailsift_schema") ==
          (s.kind() == "sqlite" ? store::schema_version : db->statistics().schema_version));
    REQUIRE_FALSE(db->linear_refit_layer());  // the next refit continues from the weights, as before
    store::TrainingBatch b(*db);
    b.add_linear_weights(12, std::vector<float>(std::size_t{1} << 12, 0.0f), 0.0, 0.0, 1, false,
                         store::RefitLayer{12, 0.5, 0.0, {{1, 1.0f}}});
    b.commit();
    REQUIRE(db->linear_refit_layer()->bias == 0.5);
}

TEST_CASE("A store from before the refit mark counts as refitted over the samples it holds", "[store]") {
    // SQLite schema 16, PostgreSQL 11: no linear_state.refit_mark. Upgrading
    // must not make the daemon refit a model nobody changed.
    FOR_EACH_BACKEND(store_);
    {
        const auto opened = store_.open();
        store::TrainingBatch b(*opened);
        b.offer_linear_sample(12, Class::spam, 0, digest(1), "From: a@example.org\n\nBuy now");
        b.offer_linear_sample(12, Class::ham, 0, digest(2), "From: b@example.org\n\nThe minutes");
        b.commit();
    }
    store_.exec("ALTER TABLE linear_state DROP COLUMN refit_mark");
    store_.exec("ALTER TABLE linear_state DROP COLUMN samples_dropped");
    const auto db = reopened_from(store_, 16, 11);
    CHECK(db->linear_weights_since(0).refit_mark == 2);
}

TEST_CASE("A store from before per-user layers gains corrections.layer_user, its corrections in no layer", "[store]") {
    // SQLite schema 18, PostgreSQL 13: no corrections.layer_user.
    FOR_EACH_BACKEND(store_);
    {
        const auto opened = store_.open();
        store::TrainingBatch b(*opened);
        store::CorrectionUndo undo;
        undo.layer = {0.5f, {1, 2}, "bob@example.org", "news@deals.example"};
        b.record_correction({model::Verdict::ham, Class::spam, 1000, digest(1), "cli:root", undo});
        b.commit();
        REQUIRE(opened->layer_census().users == 1);
    }
    store_.exec("DROP INDEX corrections_layer_user");
    store_.exec("ALTER TABLE corrections DROP COLUMN layer_user");
    const auto db = reopened_from(store_, 18, 13);
    // The column is back, empty: a correction recorded before is in no layer (the layers came with it).
    CHECK(db->layer_census().users == 0);
    CHECK(db->layer_corrections("bob@example.org").empty());
    {
        store::TrainingBatch b(*db);
        store::CorrectionUndo undo;
        undo.layer = {0.5f, {1, 2}, "bob@example.org", "news@deals.example"};
        b.record_correction({model::Verdict::ham, Class::spam, 2000, digest(2), "cli:root", undo});
        b.commit();
    }
    CHECK(db->layer_census().users == 1);
    CHECK(db->layer_corrections("bob@example.org").size() == 1);
}
