#include "topic_admin.hpp"

#include <iostream>
#include <stdexcept>

#include "kafka/topic_admin.hpp"

namespace exo::bench {

void create_topics(const std::string& bootstrap,
                   const std::vector<std::pair<std::string, int>>& topics) {
    exo::create_topics(bootstrap, {.topics = topics});
}

void delete_topics(const std::string& bootstrap, const std::vector<std::string>& topics) {
    try {
        exo::delete_topics(bootstrap, topics);
    } catch (const std::exception& e) {
        std::cerr << "[bench] warning: could not delete the run's topics: " << e.what() << "\n";
    }
}

}  // namespace exo::bench
