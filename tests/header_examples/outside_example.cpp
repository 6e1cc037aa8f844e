// The handler exo/outside_transaction.hpp describes: it asks a service for a
// quote outside the transaction and writes the order with it inside; compiled
// with the unit tests.
#include <any>
#include <exo/exo.hpp>
#include <mutex>
#include <string>

namespace header_examples {

struct Quote {
    std::string sku;
    long cents = 0;
};

// Stands in for an HTTP client: thread-safe, as before_transaction() needs.
class QuoteService {
public:
    Quote quote(const std::string& sku, const std::string& idempotency_key) const {
        std::lock_guard lock(mutex_);  // a real client would keep a connection pool here
        (void)idempotency_key;         // sent along, so a repeated call is harmless
        return {sku, static_cast<long>(sku.size()) * 100};
    }

private:
    mutable std::mutex mutex_;
};

class PricedOrderHandler final : public exo::Handler, public exo::OutsideTransaction {
public:
    // Outside any transaction, concurrently for records of different keys.
    void before_transaction(exo::OutsideContext& ctx) const override {
        const auto sku = ctx.json().at("sku").get<std::string>();  // not JSON: dead-lettered
        ctx.hand_over(prices_.quote(sku, ctx.idempotency_key()));  // a throw fails the record
    }
    // In the record's transaction, with the quote its call handed over.
    void handle(exo::HandlerContext& ctx) override {
        const auto& quote = std::any_cast<const Quote&>(ctx.handed_over());
        ctx.transaction().exec_params("INSERT INTO orders (id, sku, cents) VALUES ($1, $2, $3)",
                                      ctx.idempotency_key(), quote.sku, quote.cents);
    }

private:
    QuoteService prices_;
};

void register_priced_orders(exo::Application& app) {
    app.handler<PricedOrderHandler>("priced_orders");
}

}  // namespace header_examples
