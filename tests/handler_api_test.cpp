// What the public headers let a handler author do with its contexts
// (exo/handler.hpp, exo/batch_handler.hpp): use them, never make them. Checked
// at compile time; the behaviour behind them is the integration tests'.
#include <doctest/doctest.h>

#include <span>
#include <type_traits>

#include <exo/batch_handler.hpp>
#include <exo/handler.hpp>

namespace {

// The contexts are exo's to make (detail::ContextAccess): a test or handler
// that builds one would depend on how exo builds them.
static_assert(!std::is_default_constructible_v<exo::HandlerContext>);
static_assert(!std::is_constructible_v<exo::HandlerContext, pqxx::transaction_base&,
                                       const exo::Record&, const std::string&, spdlog::logger&>);
static_assert(!std::is_copy_constructible_v<exo::HandlerContext>);
static_assert(!std::is_constructible_v<exo::BatchContext, pqxx::transaction_base&,
                                       std::span<exo::HandlerContext>, spdlog::logger&>);
static_assert(!std::is_copy_constructible_v<exo::BatchContext>);

// A batch context is its transaction, one record context per record, and fail(i).
static_assert(std::is_same_v<decltype(std::declval<exo::BatchContext&>().records()),
                             std::span<exo::HandlerContext>>);

}  // namespace

TEST_CASE("handler contexts are made by exo only: the checks above hold at compile time") {
    CHECK(std::is_move_constructible_v<exo::HandlerContext>);  // exo keeps a batch's in a vector
}
