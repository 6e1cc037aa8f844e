// pg/migrations.hpp without a server: reading a migrations directory, the plan
// (order, owners, duplicate names), the comparison with recorded rows (pending,
// unverified, changed) and the checksum.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <exo/errors.hpp>
#include "pg/migrations.hpp"

namespace fs = std::filesystem;
using exo::Migration;
using exo::MigrationError;
using exo::MigrationOwner;

namespace {

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
    fs::path path;
    TempDir() {
        static int counter = 0;
        path = fs::temp_directory_path() /
               ("exo-migrations-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    void write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name, std::ios::binary) << text;
    }
    std::string str() const { return path.string(); }
};

std::vector<std::string> names_of(const std::vector<Migration>& migrations) {
    std::vector<std::string> out;
    out.reserve(migrations.size());
    for (const auto& m : migrations) out.push_back(m.name);
    return out;
}

std::vector<std::string> names_of(const std::vector<exo::PlannedMigration>& plan) {
    std::vector<std::string> out;
    out.reserve(plan.size());
    for (const auto& p : plan) out.push_back(p.migration.name);
    return out;
}

// The message of the MigrationError `f` throws ("" if it throws none).
template <typename F>
std::string migration_error(F&& f) {
    try {
        f();
    } catch (const MigrationError& e) {
        return e.what();
    }
    return "";
}

const std::vector<Migration> kFramework = {{"0001_core.sql", "CREATE TABLE core (id int);"},
                                           {"0002_more.sql", "CREATE TABLE more (id int);"}};

}  // namespace

TEST_CASE("a migrations directory yields its .sql files in name order, with their exact text") {
    TempDir dir;
    dir.write("0002_orders.sql", "CREATE TABLE orders (id int);\n");
    dir.write("0001_customers.sql", "CREATE TABLE customers (id int);\r\n-- caf\xC3\xA9\n");
    dir.write("0010_late.sql", "SELECT 1;");
    auto migrations = exo::read_migrations_dir(dir.str());
    CHECK(names_of(migrations) ==
          std::vector<std::string>{"0001_customers.sql", "0002_orders.sql", "0010_late.sql"});
    CHECK(migrations[0].sql == "CREATE TABLE customers (id int);\r\n-- caf\xC3\xA9\n");
    CHECK(migrations[1].sql == "CREATE TABLE orders (id int);\n");
}

TEST_CASE("files that are not migrations are ignored: other extensions, dot files, directories") {
    TempDir dir;
    dir.write("0001_a.sql", "SELECT 1;");
    dir.write("README.md", "notes");
    dir.write("0002_b.sql.bak", "SELECT 2;");
    dir.write("0003_c.SQL", "SELECT 3;");
    dir.write(".0004_hidden.sql", "SELECT 4;");
    dir.write("sql", "not a migration either");
    fs::create_directory(dir.path / "0005_dir.sql");
    CHECK(names_of(exo::read_migrations_dir(dir.str())) == std::vector<std::string>{"0001_a.sql"});
}

TEST_CASE("an empty migrations directory has no migrations") {
    TempDir dir;
    CHECK(exo::read_migrations_dir(dir.str()).empty());
}

TEST_CASE("a missing migrations directory is a MigrationError naming the path") {
    TempDir dir;
    auto missing = (dir.path / "no-such-dir").string();
    auto message = migration_error([&] { exo::read_migrations_dir(missing); });
    CHECK(message.find(missing) != std::string::npos);
}

TEST_CASE("a file given as the migrations directory is a MigrationError naming it") {
    TempDir dir;
    dir.write("0001_a.sql", "SELECT 1;");
    auto file = (dir.path / "0001_a.sql").string();
    CHECK(migration_error([&] { exo::read_migrations_dir(file); }).find(file) != std::string::npos);
}

TEST_CASE("an empty or blank .sql file is a MigrationError naming the file") {
    TempDir dir;
    dir.write("0001_a.sql", "SELECT 1;");
    SUBCASE("empty") {
        dir.write("0002_empty.sql", "");
    }
    SUBCASE("only whitespace") {
        dir.write("0002_empty.sql", " \n\t\r\n");
    }
    auto message = migration_error([&] { exo::read_migrations_dir(dir.str()); });
    CHECK(message.find((dir.path / "0002_empty.sql").string()) != std::string::npos);
    CHECK(message.find("empty") != std::string::npos);
}

TEST_CASE("a dangling link named like a migration is a MigrationError, not silently skipped") {
    TempDir dir;
    fs::create_symlink(dir.path / "nowhere.sql", dir.path / "0001_link.sql");
    CHECK(migration_error([&] { exo::read_migrations_dir(dir.str()); }).find("0001_link.sql") !=
          std::string::npos);
}

TEST_CASE("a migration error is a usage error: exit code 2") {
    CHECK(std::is_base_of_v<exo::UsageError, MigrationError>);
}

TEST_CASE("the plan is exo's migrations in their order, then the application's sorted by name") {
    std::vector<Migration> application = {
        {"0200_b.sql", "SELECT 2;"}, {"0000_first.sql", "SELECT 0;"}, {"0100_a.sql", "SELECT 1;"}};
    auto plan = exo::plan_migrations(kFramework, application);
    CHECK(names_of(plan) == std::vector<std::string>{"0001_core.sql", "0002_more.sql",
                                                     "0000_first.sql", "0100_a.sql", "0200_b.sql"});
    CHECK(plan[0].owner == MigrationOwner::exo);
    CHECK(plan[1].owner == MigrationOwner::exo);
    CHECK(plan[2].owner == MigrationOwner::application);
    CHECK(plan[4].owner == MigrationOwner::application);
    CHECK(plan[3].migration.sql == "SELECT 1;");
    CHECK(plan[3].checksum == exo::sha256_hex("SELECT 1;"));
    CHECK(std::string(exo::to_string(MigrationOwner::exo)) == "exo");
    CHECK(std::string(exo::to_string(MigrationOwner::application)) == "application");
}

TEST_CASE("two application migrations with one name are refused, naming it") {
    auto message = migration_error([] {
        exo::plan_migrations(kFramework, {{"0100_a.sql", "SELECT 1;"},
                                          {"0101_b.sql", "SELECT 2;"},
                                          {"0100_a.sql", "SELECT 3;"}});
    });
    CHECK(message.find("0100_a.sql") != std::string::npos);
    CHECK(message.find("two application migrations") != std::string::npos);
}

TEST_CASE("an application migration named like one of exo's is refused, naming it") {
    auto message = migration_error([] {
        exo::plan_migrations(kFramework, {{"0002_more.sql", "SELECT 1;"}});
    });
    CHECK(message.find("0002_more.sql") != std::string::npos);
    CHECK(message.find("exo's own migrations") != std::string::npos);
}

TEST_CASE("a migration moved from exo to the application under its name is planned once") {
    // The ledger move: exo's set no longer has the name, the application's does.
    std::vector<Migration> framework = {kFramework[0]};
    auto plan = exo::plan_migrations(framework, {kFramework[1]});
    CHECK(names_of(plan) == std::vector<std::string>{"0001_core.sql", "0002_more.sql"});
    CHECK(plan[1].owner == MigrationOwner::application);
}

TEST_CASE("an empty name, an empty text or a NUL byte in a registered migration is refused") {
    CHECK(migration_error([] {
              exo::plan_migrations(kFramework, {{"", "SELECT 1;"}});
          }).find("empty name") != std::string::npos);
    CHECK(migration_error([] {
              exo::plan_migrations(kFramework, {{"0100_a.sql", "  \n"}});
          }).find("0100_a.sql") != std::string::npos);
    CHECK(
        migration_error([] {
            exo::plan_migrations(kFramework, {{"0100_a.sql", std::string("SELECT 1;\0DROP", 14)}});
        }).find("NUL") != std::string::npos);
}

TEST_CASE("exo's embedded migrations are sql/*.sql in name order") {
    auto framework = exo::framework_migrations();
    REQUIRE_FALSE(framework.empty());
    CHECK(framework.front().name == "0001_exo_core.sql");
    for (std::size_t i = 1; i < framework.size(); ++i)
        CHECK(framework[i - 1].name < framework[i].name);
    CHECK_NOTHROW(exo::plan_migrations(framework, {}));
}

TEST_CASE("unrecorded migrations are pending in plan order; recorded ones are not") {
    auto plan = exo::plan_migrations(kFramework, {{"0100_a.sql", "SELECT 1;"}});
    SUBCASE("nothing recorded") {
        auto status = exo::compare_with_recorded(plan, {});
        CHECK(status.pending ==
              std::vector<std::string>{"0001_core.sql", "0002_more.sql", "0100_a.sql"});
        CHECK(status.unverified.empty());
    }
    SUBCASE("some recorded, with matching checksums") {
        auto status = exo::compare_with_recorded(
            plan, {{"0002_more.sql", plan[1].checksum}, {"0001_core.sql", plan[0].checksum}});
        CHECK(status.pending == std::vector<std::string>{"0100_a.sql"});
        CHECK(status.unverified.empty());
    }
    SUBCASE("recorded names outside the plan are ignored") {
        auto status = exo::compare_with_recorded(
            plan, {{"0001_core.sql", plan[0].checksum}, {"0099_removed.sql", "beef"}});
        CHECK(status.pending == std::vector<std::string>{"0002_more.sql", "0100_a.sql"});
    }
}

TEST_CASE("a recorded migration without a checksum is applied, and unverified until recorded") {
    auto plan = exo::plan_migrations(kFramework, {{"0100_a.sql", "SELECT 1;"}});
    auto status = exo::compare_with_recorded(
        plan, {{"0001_core.sql", std::nullopt}, {"0100_a.sql", std::nullopt}});
    CHECK(status.pending == std::vector<std::string>{"0002_more.sql"});
    CHECK(status.unverified == std::vector<std::string>{"0001_core.sql", "0100_a.sql"});
}

TEST_CASE("a changed applied migration is refused with its name, both checksums and the fix") {
    auto plan = exo::plan_migrations(kFramework, {{"0100_a.sql", "SELECT 1;"}});
    auto old_checksum = exo::sha256_hex("SELECT 'the old text';");
    auto message = migration_error([&] {
        exo::compare_with_recorded(
            plan, {{"0001_core.sql", plan[0].checksum}, {"0100_a.sql", old_checksum}});
    });
    CHECK(message.find("0100_a.sql (application)") != std::string::npos);
    CHECK(message.find(old_checksum) != std::string::npos);
    CHECK(message.find(plan[2].checksum) != std::string::npos);
    CHECK(message.find("add a new migration") != std::string::npos);
    CHECK(message.find("0001_core.sql") == std::string::npos);
}

TEST_CASE("every changed applied migration is named at once") {
    auto plan = exo::plan_migrations(kFramework, {});
    auto message = migration_error([&] {
        exo::compare_with_recorded(plan, {{"0001_core.sql", "aa"}, {"0002_more.sql", "bb"}});
    });
    CHECK(message.find("0001_core.sql (exo)") != std::string::npos);
    CHECK(message.find("0002_more.sql (exo)") != std::string::npos);
}

TEST_CASE("sha256_hex matches the FIPS 180-4 test vectors") {
    CHECK(exo::sha256_hex("") ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(exo::sha256_hex("abc") ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(exo::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(exo::sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                          "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
          "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    CHECK(exo::sha256_hex(std::string(1000000, 'a')) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256_hex is right at every padding boundary (55, 56, 63, 64, 65 bytes)") {
    // Expected values from coreutils sha256sum.
    CHECK(exo::sha256_hex(std::string(55, 'x')) ==
          "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
    CHECK(exo::sha256_hex(std::string(56, 'x')) ==
          "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
    CHECK(exo::sha256_hex(std::string(63, 'x')) ==
          "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2");
    CHECK(exo::sha256_hex(std::string(64, 'x')) ==
          "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
    CHECK(exo::sha256_hex(std::string(65, 'x')) ==
          "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9");
}
